"""The reference RAG HTTP service's module path: ``component_services.rag_service.main:app`` is dashrag's service."""
