"""TPC-C (specification 5.11) for Meridian and PostgreSQL 15 alike: schema, loader, the
five transactions, a terminal driver and the consistency conditions 1-4."""
