"""`controller verify --profile NAME`: is the model still right under a kernel profile, and how
fast is it end to end?

The example model runs on N fixed input seeds per batch size: an FP32 reference, the BF16
baseline (per output the worse of `kernel_profile=torch` and `stock`) and the profile. Each
continuous output's errors against the FP32 reference may exceed the baseline's by at most 25%
on average and 2x at worst;
discrete outputs must equal the baseline's. On CUDA the forward is also timed, captured in one
CUDA graph, under the profile, none and stock (the references with SDPA attention), paired and
interleaved over rounds; a profile not faster than none in every round fails. Last, the cases
are judged once more after every other forward, so outputs that change once judged fail. An
installed profile that passes is marked verified (`verified.json`, bound to its
`profile.json`), which it needs to load outside this command; one that fails is left
unverified. The profile's code runs in a Landlock-fenced child where the profiles are read-only
(`--unfenced`: in this process), so nothing it leaves behind can write the record or change
what was judged. Exit 0 when the gate passes, 1 when it does not, 2 on bad input or a baseline
far from the FP32 reference.
"""

import datetime
from pathlib import Path

EXIT_FAILED = 1
EXIT_ERROR = 2


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "verify",
        help="check a kernel profile's model-level numerics and time the model end to end",
        description=" ".join(__doc__.split("\n\n")[0].split()),
    )
    parser.add_argument(
        "--profile", required=True, metavar="NAME", help="an installed profile, auto or none"
    )
    parser.add_argument("--inputs", type=int, default=4, metavar="N", help="seeds per batch (4)")
    parser.add_argument(
        "--batch",
        type=int,
        action="append",
        metavar="B",
        help="batch size; repeat for several (default: 1 and 8)",
    )
    parser.add_argument(
        "--size", choices=("tiny", "pi05"), help="model size (pi05 on CUDA, tiny on a CPU)"
    )
    parser.add_argument(
        "--driver",
        metavar="MODULE:FUNCTION",
        help="a target's parity driver taking (batch, seed) instead of the example model "
        "(numerics only, not timed)",
    )
    parser.add_argument("--no-timing", action="store_true", help="only the numerical gate")
    parser.add_argument("--output", type=Path, metavar="REPORT", help="the JSON report's path")
    parser.add_argument(
        "--tuned-root", type=Path, metavar="DIR", help="where profiles live (default: tuned/)"
    )
    parser.add_argument(
        "--unfenced",
        action="store_true",
        help="run the profile's code in this process instead of a Landlock-fenced child, where "
        "the profiles are read-only (the record says which)",
    )
    parser.set_defaults(func=run)


def run(arguments) -> int:
    from controller.errors import ControllerError

    batches = arguments.batch or [1, 8]
    if arguments.inputs < 1 or min(batches) < 1:
        raise ControllerError(
            f"--inputs {arguments.inputs} --batch {batches}: give at least 1 input and batch "
            "sizes of at least 1"
        )
    from controller.verification.fenced_verify import VerifyRequest, new_nonce, verify_fenced
    from controller.verification.verify import (
        DriverForwards,
        ExampleForwards,
        verify_profile,
        write_report,
    )
    from examples.config import SIZES
    from operators import KernelSelection, triton_runtime
    from operators.profile_verification import (
        VERIFIED_FILE,
        clear_verification,
        record_verification,
    )
    from operators.profiles import PROFILE_FILE, TUNED_ROOT
    from operators.selection import BUILTIN_PROFILES

    device = triton_runtime.default_device()
    size = SIZES[arguments.size or ("pi05" if device.type == "cuda" else "tiny")]
    if size.needs_cuda and device.type != "cuda":
        raise ControllerError(f"--size {size.name} needs a CUDA GPU; use --size tiny here")
    if arguments.tuned_root and device.type == "cuda" and not arguments.no_timing:
        raise ControllerError(
            "--tuned-root: the end-to-end timing loads profiles from tuned/ only; install the "
            "profile there or pass --no-timing"
        )
    tuned_root = arguments.tuned_root or TUNED_ROOT
    installed = None if arguments.profile in BUILTIN_PROFILES else tuned_root / arguments.profile
    if installed is not None and not (installed / PROFILE_FILE).is_file():
        raise ControllerError(
            f"kernel profile {arguments.profile!r} is not installed in {tuned_root}"
        )
    if arguments.unfenced:
        selection = KernelSelection(arguments.profile, tuned_root=tuned_root, allow_unverified=True)
        selection.prepare()  # a missing, tampered or foreign profile is refused before any forward
    if installed is not None:
        clear_verification(installed)
    if arguments.unfenced:
        report = verify_profile(
            arguments.profile,
            selection,
            DriverForwards(arguments.driver, device)
            if arguments.driver
            else ExampleForwards(size, device),
            batches,
            arguments.inputs,
            time_it=not arguments.no_timing,
        )
    else:  # the profile's code runs only in the fenced child; this process never imports it
        request = VerifyRequest(
            profile=arguments.profile,
            tuned_root=tuned_root.resolve(),
            size=size.name,
            driver=arguments.driver,
            driver_folder=Path.cwd().resolve() if arguments.driver else None,
            batches=batches,
            inputs=arguments.inputs,
            time_it=not arguments.no_timing,
            device=device.type,
            nonce=new_nonce(),
        )
        print(
            f"verify: the model under {arguments.profile!r} in a Landlock-fenced child (batches "
            f"{batches}, {arguments.inputs} inputs each); the verdict follows when it ends",
            flush=True,
        )
        report = verify_fenced(request)
    output = arguments.output or _default_output(arguments.profile)
    write_report(report, output)
    passed = report.passed and not report.error
    if installed is not None:  # a record the profile's own code wrote while it ran is dropped
        clear_verification(installed)
        if passed:
            verified_by = "controller verify" + (" --unfenced" if arguments.unfenced else "")
            record_verification(installed, verified_by, bool(report.timing), output)
    _print(report, output)
    if installed is not None:
        state = "verified" if passed else "left unverified"
        print(f"profile {arguments.profile!r} {state} ({installed / VERIFIED_FILE})")
    if report.error:
        return EXIT_ERROR
    return 0 if report.passed else EXIT_FAILED


def _default_output(profile: str) -> Path:
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    return Path("runs") / f"verify-{profile}-{stamp}.json"


def _print(report, output: Path) -> None:
    print(
        f"verify profile {report.profile!r}: {report.model}, batches "
        f"{report.batches}, {report.inputs} inputs each, on {report.device}"
    )
    if report.error:
        print(f"  error: {report.error}")
    for verdict in report.outputs:
        if verdict.discrete:
            state = "ok" if verdict.passed else "FAIL: " + "; ".join(verdict.failures)
            print(f"  {verdict.name}: discrete, {state}")
            continue
        state = "ok" if verdict.passed else "FAIL: " + "; ".join(verdict.failures)
        print(
            f"  {verdict.name}: mean max-abs {verdict.candidate_mean_max_abs:.3g} (baseline "
            f"{verdict.baseline_mean_max_abs:.3g}), mean RMSE {verdict.candidate_mean_rmse:.3g} "
            f"({verdict.baseline_mean_rmse:.3g}), worst max-abs "
            f"{verdict.candidate_worst_max_abs:.3g} ({verdict.baseline_worst_max_abs:.3g}): {state}"
        )
    for timing in report.timing:
        figures = ", ".join(
            f"{timing.label(name)} {ms:.2f} ms" for name, ms in timing.median_ms.items()
        )
        print(f"  batch {timing.batch} ({timing.mode}, {timing.rounds} paired rounds): {figures}")
        for ratio in timing.ratios:
            print(f"    {timing.described(ratio)}")
    for failure in report.speed_failures:
        print(f"  FAIL: {failure}")
    for note in report.notes:
        print(f"  note: {note}")
    print(f"{'PASSED' if report.passed else 'FAILED'}; report in {output}")
