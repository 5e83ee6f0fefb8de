"""Running engines for people who have none: a local PostgreSQL server with pgvector (``dashrag pg``)."""
