"""Import paths of the reference services, for deployments that name them (docs/service.md)."""
