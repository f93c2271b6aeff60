"""The catalog assistant: constraint-aware, catalog-grounded answers over public-service directories."""
