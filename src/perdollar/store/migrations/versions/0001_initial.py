"""The first schema: measurements and recommendations.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "measurements",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("workload_fingerprint", sa.String(64), nullable=False),
        sa.Column("workload_name", sa.String(200), nullable=False),
        sa.Column("mode", sa.String(32), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("batch_size", sa.Integer, nullable=False),
        sa.Column("precision", sa.String(16), nullable=False),
        sa.Column("host_instance_type", sa.String(100), nullable=False),
        sa.Column("host_accelerator", sa.String(100)),
        sa.Column("samples_per_second", sa.Float),
        sa.Column("started_at", sa.String(40), nullable=False),
        sa.Column("stored_at", sa.String(40), nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
    )
    op.create_index("ix_measurements_workload_fingerprint", "measurements", ["workload_fingerprint"])
    op.create_index("ix_measurements_workload_name", "measurements", ["workload_name"])
    op.create_table(
        "recommendations",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("workload_fingerprint", sa.String(64), nullable=False),
        sa.Column("workload_name", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("objective", sa.String(40), nullable=False),
        sa.Column("catalog_snapshot_id", sa.String(100), nullable=False),
        sa.Column("catalog_captured_at", sa.String(40), nullable=False),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
    )
    op.create_index("ix_recommendations_workload_fingerprint", "recommendations", ["workload_fingerprint"])
    op.create_index("ix_recommendations_workload_name", "recommendations", ["workload_name"])


def downgrade() -> None:
    op.drop_table("recommendations")
    op.drop_table("measurements")
