"""Gate 7, registry hits: each selected call site reaches the new operator in every configuration.

A routed call site that the parity drivers never execute proves nothing, so each site must be
counted at least once by `record_registry_hits` in each configuration.
"""

from gates.registration.call_sites import CallSite
from gates.registration.probes import ProbeResult
from gates.target import TargetConfig
from gates.verdict import Verdict

GATE = "registry_hits"


def check(
    candidate: ProbeResult, config: TargetConfig, operator: str, sites: list[CallSite]
) -> Verdict:
    """Every (configuration, call site) pair has at least one `ops.<operator>` hit."""
    if candidate.problem:
        return Verdict(gate=GATE, passed=False, summary=candidate.problem)
    counts: dict[str, dict[str, int]] = {}
    missing: list[str] = []
    for driver in config.parity_configurations:
        problem = candidate.configuration_problem(driver)
        if problem:
            return Verdict(gate=GATE, passed=False, summary=problem)
        hits: dict[tuple[str, str], int] = {}
        for op, file, qualname, n in candidate.configurations[driver]["hits"]:
            if op == operator:
                hits[(file, qualname)] = hits.get((file, qualname), 0) + n
        counts[driver] = {str(site): hits.get((site.path, site.qualname), 0) for site in sites}
        missing += [f"{site} in {driver}" for site in sites if not counts[driver][str(site)]]
    details = {"hits": counts}
    if missing:
        summary = f"ops.{operator} was never reached from {missing[0]}" + (
            f" (and {len(missing) - 1} more site/configuration pairs)" if len(missing) > 1 else ""
        )
        return Verdict(gate=GATE, passed=False, summary=summary, details=details)
    summary = f"every selected call site reached ops.{operator} in every parity configuration"
    return Verdict(gate=GATE, passed=True, summary=summary, details=details)
