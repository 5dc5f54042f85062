"""The store's tables, as of the newest migration (queries use these; migrations own the DDL).

Each row keeps the fields people filter and sort by as indexed columns and the whole object
as a JSON payload, so that new dataclass fields need no migration.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

measurements = sa.Table(
    "measurements",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("workload_fingerprint", sa.String(64), nullable=False, index=True),
    sa.Column("workload_name", sa.String(200), nullable=False, index=True),
    sa.Column("mode", sa.String(32), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("batch_size", sa.Integer, nullable=False),
    sa.Column("precision", sa.String(16), nullable=False),
    sa.Column("host_instance_type", sa.String(100), nullable=False),
    sa.Column("host_accelerator", sa.String(100)),
    sa.Column("samples_per_second", sa.Float),
    sa.Column("started_at", sa.String(40), nullable=False),
    sa.Column("stored_at", sa.String(40), nullable=False, index=True),
    sa.Column("payload", sa.Text, nullable=False),
    sa.Column("source", sa.String(32), nullable=False, server_default="bench"),
)

recommendations = sa.Table(
    "recommendations",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("workload_fingerprint", sa.String(64), nullable=False, index=True),
    sa.Column("workload_name", sa.String(200), nullable=False, index=True),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("objective", sa.String(40), nullable=False),
    sa.Column("catalog_snapshot_id", sa.String(100), nullable=False),
    sa.Column("catalog_captured_at", sa.String(40), nullable=False),
    sa.Column("created_at", sa.String(40), nullable=False, index=True),
    sa.Column("payload", sa.Text, nullable=False),
    sa.Column("top_choice", sa.String(300)),
)

catalog_snapshots = sa.Table(
    "catalog_snapshots",
    metadata,
    sa.Column("snapshot_id", sa.String(100), primary_key=True),
    sa.Column("captured_at", sa.String(40), nullable=False),
    sa.Column("stored_at", sa.String(40), nullable=False),
    sa.Column("offer_count", sa.Integer, nullable=False),
    sa.Column("payload", sa.Text, nullable=False),
)
