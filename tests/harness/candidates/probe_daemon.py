import os
import sys

import torch
import torch.nn as nn

# A daemon that leaves the candidate's process (double fork, new session) and lives on, named by a
# marker the test looks for on the host afterwards.
MARKER = "MARKER_PLACEHOLDER"
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", f"import time\nwhile True: time.sleep(1)  # {MARKER}"])
    os._exit(0)
os.wait()


class ModelNew(nn.Module):
    def forward(self, A, B):
        return torch.matmul(A, B)
