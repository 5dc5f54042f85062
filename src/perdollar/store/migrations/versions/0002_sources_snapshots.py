"""Where each measurement came from, each recommendation's top choice, and catalog snapshots.

Revision ID: 0002
Revises: 0001

``top_choice`` is filled in for recommendations stored before it existed, from their payload,
so that `perdollar history` shows old rows the same way as new ones.
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _label(estimate: dict) -> str:
    return (
        f"{estimate.get('nodes', 1)}x {estimate.get('instance_type')} {estimate.get('market')} "
        f"({estimate.get('cloud')} {estimate.get('region')})"
    )


def _top_choice(payload: str) -> str | None:
    estimates = json.loads(payload).get("estimates") or []
    feasible = [e for e in estimates if not e.get("excluded_reason")]
    return _label(feasible[0])[:300] if feasible else None


def upgrade() -> None:
    with op.batch_alter_table("measurements") as batch:
        batch.add_column(sa.Column("source", sa.String(32), nullable=False, server_default="bench"))
        batch.create_index("ix_measurements_stored_at", ["stored_at"])
    with op.batch_alter_table("recommendations") as batch:
        batch.add_column(sa.Column("top_choice", sa.String(300)))
        batch.create_index("ix_recommendations_created_at", ["created_at"])
    op.create_table(
        "catalog_snapshots",
        sa.Column("snapshot_id", sa.String(100), primary_key=True),
        sa.Column("captured_at", sa.String(40), nullable=False),
        sa.Column("stored_at", sa.String(40), nullable=False),
        sa.Column("offer_count", sa.Integer, nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
    )

    recommendations = sa.table(
        "recommendations", sa.column("id"), sa.column("payload"), sa.column("top_choice")
    )
    connection = op.get_bind()
    for row_id, payload in connection.execute(sa.select(recommendations.c.id, recommendations.c.payload)):
        connection.execute(
            recommendations.update()
            .where(recommendations.c.id == row_id)
            .values(top_choice=_top_choice(payload))
        )


def downgrade() -> None:
    op.drop_table("catalog_snapshots")
    with op.batch_alter_table("recommendations") as batch:
        batch.drop_index("ix_recommendations_created_at")
        batch.drop_column("top_choice")
    with op.batch_alter_table("measurements") as batch:
        batch.drop_index("ix_measurements_stored_at")
        batch.drop_column("source")
