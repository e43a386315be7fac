import sys
from pathlib import Path

# The test harness (local control plane, operator process, fake kubelet) lives in e2e/.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
