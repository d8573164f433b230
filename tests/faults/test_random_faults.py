"""One short seed of the randomized fault checker (:mod:`chaos`) under ``make test``; ``make faults-random`` runs more.

Both modes in one ``mirrorspark run`` (one flow each), a 1-broker target (so ``kill-leader`` is left
out: it needs three brokers, ``make faults-random`` has them), 40 s of faults drawn from the seed (its
four faults, as at 60 s: a schedule scales with the duration and the spacing). The checker's verdict is
the assertion: nothing lost unless a gap that ``mirrorspark status --json`` names holds it and the fault
log shows it removed before that gap was found, no gap that no fault explains, copies twice within the
bound (none in exactly-once), order kept, no checkpoint past a copied record. Never a timing.
"""

from __future__ import annotations

from pathlib import Path

import chaos
import pytest

SEED = 11
KINDS = "kill-run,kill-worker,kill-jvm,recreate-topic,delete-records,add-partitions,foreign-offset,cut-driver"


@pytest.mark.timeout(1800)
def test_a_short_random_seed_in_both_modes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--seed", str(SEED), "--duration", "40", "--spacing", "10", "--mode", "both", "--target-brokers", "1"]
    args += ["--kinds", KINDS, "--figures", str(tmp_path / "random.jsonl")]
    code = chaos.run(chaos.options(args))
    out = capsys.readouterr().out
    assert code == 0, out[-6000:]
