"""The retrieval service: ``dashrag serve`` (the reference ``POST /retrieve`` contract plus the tree API).

The pipeline steps are small pure functions, one per module (``complexity``, ``gates``,
``packing``, ``citations``, ``calibration``), composed by ``pipeline``; ``collections``
is what is searched (saved-tree folders, and any other kind that speaks the
:class:`~dashrag.service.collections.Collection` protocol); ``app`` builds the FastAPI app.
"""
