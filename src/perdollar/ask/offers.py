"""The offers a question may buy, as billed: its market (committed terms and capacity bought ahead
included), its managed service, its horizon and the known capacity constraints — and, after
pricing, its quotas."""

from __future__ import annotations

import collections
from pathlib import Path

import numpy as np
import pandas as pd

from perdollar.ask.near import near_offers
from perdollar.catalog import Catalog
from perdollar.catalog.committed import with_committed
from perdollar.catalog.filters import allowed_offers
from perdollar.catalog.managed import has_managed_spot, managed_offers
from perdollar.catalog.markets import (
    ahead_market_note,
    ahead_markets_named,
    no_price_reason,
    unpriced_offers,
    with_market_offers,
)
from perdollar.catalog.purchase import unranked_reasons, with_capacity_flags
from perdollar.catalog.quotas import check_known, over_quota_reasons, read_quotas
from perdollar.errors import PerdollarError
from perdollar.price.committed import bill_over_horizon, horizon_note, market_comparison
from perdollar.question import Question
from perdollar.vocabulary import COMMITTED_MARKETS, MARKET_CHOICES, MARKET_CHOICES_TEXT


def market_names(market: str) -> tuple[str, ...]:
    """``on-demand,committed`` → both names; each must be a market (or ``committed``/``any``)."""
    names = tuple(m.strip() for m in market.split(","))
    unknown = [m for m in names if m not in MARKET_CHOICES]
    if unknown:
        from perdollar.catalog.names import suggestion_text

        near = suggestion_text(unknown[0], MARKET_CHOICES)
        raise PerdollarError(
            f"--market {unknown[0]!r} is not a market",
            f"{near + ' ' if near else ''}use {MARKET_CHOICES_TEXT}, or several with commas",
        )
    return names


def check_market(market: str) -> None:
    market_names(market)


def wants_committed(market: str, horizon_months: float | None) -> bool:
    """Committed terms are asked for by name, or by ``any`` with a horizon: without one a term's
    bill has no length to be weighed against, so ``any`` keeps to on-demand and spot."""
    names = market_names(market)
    return any(m in ("committed", *COMMITTED_MARKETS) for m in names) or (
        "any" in names and horizon_months is not None
    )


def billed_offers(
    question: Question, catalog: Catalog, *, use: str, priced_only: bool = False
) -> pd.DataFrame:
    """Every market's offers in the question's clouds and regions (and near its users), priced as
    billed (committed terms over the horizon, with their break-even); ``use`` is training or inference."""
    check_market(question.market)
    offers = catalog.offers_frame()
    bill = question.bill
    if bill.quotas:  # a bad file, or a row that binds nothing, is said before any work
        check_known(Path(bill.quotas), read_quotas(Path(bill.quotas)), catalog.instances_frame())
    if bill.horizon_months is not None and not bill.horizon_months > 0:
        raise PerdollarError(
            f"--horizon {bill.horizon_months:g} is not a length of time", "give months, e.g. 12"
        )
    if bill.service:
        sold = {"any", "on-demand", *(("spot",) if has_managed_spot(bill.service, use) else ())}
        if set(market_names(question.market)) - sold:
            markets = " and ".join(sorted(sold - {"any"}))
            raise PerdollarError(
                f"--service {bill.service} bills {markets} only for {use}; --market {question.market} "
                "does not apply",
                f"leave --market out (or give --market {' or '.join(sorted(sold - {'any'}))}) with --service",
            )
        offers = managed_offers(offers, bill.service, use)
    else:
        if wants_committed(question.market, bill.horizon_months):
            offers = bill_over_horizon(with_committed(offers), bill.horizon_months)
        offers = with_market_offers(offers, ahead_markets_named(question.market), catalog.instances_frame())
    offers = allowed_offers(offers, clouds=question.clouds, regions=question.regions, priced_only=priced_only)
    return with_capacity_flags(near_offers(offers, question))


def in_market(offers: pd.DataFrame, question: Question) -> pd.DataFrame:
    """The offers the question's market may rank: in that market, sold in it, at a standard price."""
    chosen = allowed_offers(offers, market=question.market)
    ranked = chosen[unranked_reasons(chosen) == ""]
    if ranked.empty and (named := ahead_markets_named(question.market)):
        # A market bought ahead whose machines carry no bundled price: say so, not "no offer".
        unpriced = pd.concat([unpriced_offers(offers, m) for m in named])
        if not unpriced.empty:
            machines = sorted(set(unpriced["instance_type"].astype(str)))
            raise PerdollarError(
                f"--market {question.market}: {no_price_reason(' or '.join(named))} of "
                f"{', '.join(machines[:4])}{' and more' if len(machines) > 4 else ''} in the allowed "
                "clouds and regions",
                "ask for a market with published prices (on-demand, spot, flex-start, capacity-block) "
                "or widen --cloud/--region",
                exit_code=3,
            )
    return ranked


def _machine_names(offers: pd.DataFrame) -> np.ndarray:
    """'cloud instance_type market' of every offer (read as plain arrays: a categorical column
    iterated a value at a time costs more than the whole note)."""
    columns = (offers[c].to_numpy(dtype=object) for c in ("cloud", "instance_type", "market"))
    return np.array([f"{c} {i} {m}" for c, i, m in zip(*columns, strict=True)], dtype=object)


def left_out_notes(offers: pd.DataFrame, question: Question) -> tuple[str, ...]:
    """One line per reason the question's market left offers out, naming a few machines of each:
    not sold in it, not at a standard rate, or (a market bought ahead) no published price."""
    chosen = allowed_offers(offers, market=question.market)
    named = ahead_markets_named(question.market)
    unpriced = [unpriced_offers(offers, m) for m in named]
    no_price = (
        np.full(len(rows), no_price_reason(m), dtype=object) for rows, m in zip(unpriced, named, strict=True)
    )
    reasons = np.concatenate([unranked_reasons(chosen), *no_price])
    chosen = pd.concat([chosen, *unpriced], ignore_index=True) if unpriced else chosen
    if chosen.empty:
        return ()
    notes = []
    names = _machine_names(chosen)
    everywhere = collections.Counter(names)
    for reason in dict.fromkeys(r for r in reasons if r):
        rows = chosen[reasons == reason]
        regions = collections.Counter(names[reasons == reason])
        machines = [
            name if count == everywhere[name] else f"{name} in {count} of {everywhere[name]} regions"
            for name, count in regions.items()
        ]
        listed = ", ".join(machines[:3]) + (f" and {len(machines) - 3} more" if len(machines) > 3 else "")
        notes.append(f"not ranked: {len(rows):,} offer(s) ({listed}): {reason}")
    return tuple(notes)


def without_lone_clusters(priced: pd.DataFrame, catalog: Catalog) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """``priced`` without the clusters of machines that train alone, and the note that says so.

    A GPU cloud that states no network between its machines is no cluster: its multi-node rows are
    not candidates at all (listing them as exclusions would crowd out the reasons that tell a user
    something about the workload), and one note names the clouds.
    """
    if priced.empty:
        return priced, ()
    pairs = set(zip(priced["cloud"], priced["instance_type"], strict=True))
    lone = {pair for pair in pairs if (m := catalog.instance_types.get(pair)) and m.single_node_reason}
    several = priced["nodes"].to_numpy() > 1
    apart = several & np.fromiter(
        (pair in lone for pair in zip(priced["cloud"], priced["instance_type"], strict=True)),
        dtype=bool,
        count=len(priced),
    )
    if not apart.any():
        return priced, ()
    clouds = sorted(set(priced.loc[apart, "cloud"]))
    note = (
        f"one node only on {', '.join(clouds)}: they state no network between their machines, so "
        "no multi-node training is offered there"
    )
    return priced[~apart], (note,)


def question_offers(
    question: Question, catalog: Catalog, *, use: str, priced_only: bool = False
) -> pd.DataFrame:
    """The question's allowed offers in its market, priced as billed."""
    return in_market(billed_offers(question, catalog, use=use, priced_only=priced_only), question)


def quota_excluded(
    frame: pd.DataFrame, question: Question, machines: str, *, reason_column: str = "excluded_reason"
) -> pd.DataFrame:
    """``frame`` with candidates over the question's quotas given a reason (and made infeasible
    where the frame has a ``feasible`` column); unchanged without --quotas."""
    if not question.bill.quotas or frame.empty:
        return frame
    quotas = read_quotas(Path(question.bill.quotas))
    out = frame.copy()
    gpus = out["accelerator_count"] if "accelerator_count" in out else pd.Series(0.0, index=out.index)
    reasons = np.array(over_quota_reasons(out, quotas, out[machines].fillna(0), gpus.fillna(0)), dtype=object)
    over = reasons != ""
    if reason_column not in out:
        out[reason_column] = ""
    existing = out[reason_column].fillna("").astype(str).to_numpy(dtype=object)
    out[reason_column] = np.where(over & (existing == ""), reasons, existing)
    if "feasible" in out:
        out["feasible"] = out["feasible"].to_numpy(dtype=bool) & ~over
    return out


def bill_notes(question: Question, bills: pd.DataFrame | None, machines_label: str) -> tuple[str, ...]:
    """The managed service's and the horizon's rules, and the top deployment's bill in every market."""
    notes: list[str] = []
    if question.bill.service:
        notes.append(
            f"priced as {question.bill.service} bills: the VM's on-demand rate × (1 + the service's "
            "published surcharge), only machines the service offers (rates and sources: managed_services.csv)"
        )
    if bills is None or not bills["market"].astype(str).str.startswith("committed-").any():
        return tuple(notes)
    notes.append(horizon_note(question.bill.horizon_months))
    line = market_comparison(bills, machines_label)
    return (*notes, line) if line else tuple(notes)


def same_machine(offers: pd.DataFrame, top: pd.Series) -> pd.DataFrame:
    """The top candidate's machine in its region, cheapest offer per market."""
    rows = offers[
        (offers["cloud"] == top["cloud"])
        & (offers["instance_type"] == top["instance_type"])
        & (offers["region"] == top["region"])
    ]
    return rows.sort_values("price_per_hour").drop_duplicates("market")


def training_bill_notes(question: Question, offers: pd.DataFrame, ranked: pd.DataFrame) -> tuple[str, ...]:
    """Training pays every node in every market: the top shape's bill is its nodes × each rate."""
    ahead = tuple(ahead_market_note(m) for m in ahead_markets_named(question.market))
    if ranked.empty:
        return bill_notes(question, None, "") + ahead
    top = ranked.iloc[0]
    nodes = int(top["nodes"])
    rows = same_machine(offers, top)
    bills = pd.DataFrame({"market": rows["market"], "usd_per_hour": rows["price_per_hour"] * nodes})
    label = f"{nodes}x {top['instance_type']} ({top['cloud']} {top['region']})"
    return bill_notes(question, bills, label) + ahead + _booked_blocks(top, label)


def _booked_blocks(top: pd.Series, label: str) -> tuple[str, ...]:
    """The days of capacity blocks the top choice books, where it is one."""
    days = top.get("block_days")
    if top["market"] != "capacity-block" or days is None or not days > 0:
        return ()
    hours = float(top["expected_time_hours"])
    return (
        f"{label} books {days:.0f} day(s) of capacity blocks for {hours / 24:.1f} days of work: "
        f"its cost pays the whole blocks (${float(top['expected_cost_usd']):,.0f})",
    )


def labelled_offers(question: Question, catalog: Catalog) -> pd.DataFrame:
    """Every market's offers, committed terms included, for configurations that name their market."""
    return bill_over_horizon(with_committed(catalog.offers_frame()), question.bill.horizon_months)
