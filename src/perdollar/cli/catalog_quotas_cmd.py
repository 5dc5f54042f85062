"""``perdollar catalog quotas``: write a GPU quotas file from a cloud's quota service."""

from __future__ import annotations

import typer

from perdollar.cli.catalog_cmd import catalog_app
from perdollar.cli.catalog_options import QuotasTarget
from perdollar.cli.common import err_console
from perdollar.cli.declared import Group, takes
from perdollar.cli.shared_options import OPTIONS, OUTPUT, Output
from perdollar.errors import PerdollarError


@catalog_app.command("quotas")
@takes(target=Group(QuotasTarget, panel=OPTIONS))
def catalog_quotas(
    from_cloud: str = typer.Option(..., "--from-cloud", help="The cloud to read quotas from: aws."),
    *,
    target: QuotasTarget,
) -> None:
    """Write a quotas file (cloud,region,family,gpus) for `recommend --quotas` from AWS Service Quotas.

    EC2 counts accelerated-instance quotas in vCPUs per class (P, G and VT, DL, Inf, Trn): each
    family gets the GPUs of as many whole machines of its largest size as the class's vCPU quota
    holds, an upper bound since the family shares the quota with its class.

      perdollar catalog quotas --from-cloud aws --region us-east-1 --region us-west-2 -o quotas.csv
    """
    region, out = list(target.region), target.out
    from perdollar.catalog import load
    from perdollar.catalog.quotas import write_quotas
    from perdollar.catalog.quotas_aws import aws_gpu_quotas

    if from_cloud.lower() != "aws":
        raise PerdollarError(
            f"--from-cloud {from_cloud!r}: only AWS quotas can be read",
            "write the CSV cloud,region,family,gpus by hand for other clouds",
        )
    quotas = aws_gpu_quotas(region, load().instances_frame())
    write_quotas(out, quotas)
    err_console.print(f"wrote {len(quotas)} GPU quotas for {', '.join(region)} to {out}", highlight=False)


@catalog_app.command("terms")
@takes(output=OUTPUT)
def catalog_terms(
    *,
    output: Output,
) -> None:
    """Every dated figure of the bill beyond captured prices: committed-use discounts, managed-service
    rates and capacity constraints, with source, date and age ('stale' like prices).

      perdollar catalog terms
    """
    json_output = output.json_output
    import dataclasses
    import datetime as dt

    from rich.table import Table

    from perdollar.catalog.bill_terms import dated_figures
    from perdollar.catalog.price_age import stale_after_days
    from perdollar.cli.catalog_render import print_table
    from perdollar.cli.common import emit_json

    figures = dated_figures(dt.datetime.now(dt.UTC).date())
    if json_output:
        emit_json([{**dataclasses.asdict(f), "as_of": str(f.as_of)} for f in figures])
        return
    table = Table(title=f"{len(figures)} dated bill figures (stale past {stale_after_days()} days)",
                  title_justify="left")  # fmt: skip
    for header in ("kind", "cloud", "applies to", "figure", "confidence", "as of", "source"):
        table.add_column(header, no_wrap=header in ("kind", "cloud", "as of"))
    for f in figures:
        age = f"{f.as_of}" + (" stale" if f.stale else "")
        table.add_row(f.kind, f.cloud, f.applies_to, f.figure, f.confidence, age, f.source)
    print_table(table)
