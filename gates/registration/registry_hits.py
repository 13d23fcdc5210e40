"""Gate 7, registry hits: each selected call site reaches the new operator in every configuration.

A routed call site that the parity drivers never execute proves nothing, so each site must be
counted at least once by `record_registry_hits` in each configuration, hidden ones included, and
in each direct call on drawn inputs that BASE accepts (a site routed only at the drivers' batch
sizes is caught there).
"""

from gates.registration.call_sites import CallSite
from gates.registration.hidden import HiddenDraw, configuration_names
from gates.registration.probes import ProbeResult
from gates.target import TargetConfig
from gates.verdict import Verdict

GATE = "registry_hits"


def check(
    candidate: ProbeResult,
    config: TargetConfig,
    operator: str,
    sites: list[CallSite],
    hidden: HiddenDraw | None = None,
    base: ProbeResult | None = None,
) -> Verdict:
    """Every (configuration, call site) pair and every direct call BASE accepts has at least one
    `ops.<operator>` hit."""
    if candidate.problem:
        return Verdict(gate=GATE, passed=False, summary=candidate.problem)
    counts: dict[str, dict[str, int]] = {}
    missing: list[str] = []
    for driver in configuration_names(config, hidden or HiddenDraw()):
        problem = candidate.configuration_problem(driver)
        if problem:
            return Verdict(gate=GATE, passed=False, summary=problem)
        hits: dict[tuple[str, str], int] = {}
        for op, file, qualname, n in candidate.configurations[driver]["hits"]:
            if op == operator:
                hits[(file, qualname)] = hits.get((file, qualname), 0) + n
        counts[driver] = {str(site): hits.get((site.path, site.qualname), 0) for site in sites}
        missing += [f"{site} in {driver}" for site in sites if not counts[driver][str(site)]]
    missing += _unrouted_direct_calls(candidate, base, operator, sites)
    details = {"hits": counts}
    if missing:
        summary = f"ops.{operator} was never reached from {missing[0]}" + (
            f" (and {len(missing) - 1} more site/configuration pairs)" if len(missing) > 1 else ""
        )
        return Verdict(gate=GATE, passed=False, summary=summary, details=details)
    summary = f"every selected call site reached ops.{operator} in every parity configuration"
    return Verdict(gate=GATE, passed=True, summary=summary, details=details)


def _unrouted_direct_calls(
    candidate: ProbeResult, base: ProbeResult | None, operator: str, sites: list[CallSite]
) -> list[str]:
    missing = []
    for site in sites:
        entries = candidate.direct_calls.get(str(site), [])
        accepted = base.direct_calls.get(str(site), []) if base else entries
        for index, entry in enumerate(entries):
            base_entry = accepted[index] if index < len(accepted) else {}
            if entry.get("error") or base_entry.get("error") or "size" not in base_entry:
                continue  # bit-exact parity judges calls that raise
            reached = sum(
                n
                for op, file, qualname, n in entry.get("hits", [])
                if op == operator and (file, qualname) == (site.path, site.qualname)
            )
            if not reached:
                missing.append(f"{site} called directly on drawn inputs (call {index + 1})")
    return missing
