import os
import time

import torch.nn as nn

# Writes into its build cache (where load_inline keeps its builds) while it "builds": 8 files of 8 MiB,
# then keeps building for a while. The harness stops it while it runs, not after.
_cache = os.path.join(os.environ["HOME"], ".cache", "filler")
os.makedirs(_cache, exist_ok=True)
for index in range(8):
    with open(os.path.join(_cache, f"part-{index}"), "wb") as handle:
        handle.write(b"x" * (8 << 20))
time.sleep(30)


class ModelNew(nn.Module):
    def forward(self, A, B):
        return A @ B
