import gc
import time

import torch.nn as nn


class ModelNew(nn.Module):
    """Slow (50 ms a call), and rewrites the times in every reply its process sends to the harness,
    through the channel object found with gc: the times the parent uses never pass through there."""

    def forward(self, A):
        time.sleep(0.05)
        return A.sum(1)


def _forge(channel):
    send = channel.send

    def forged(message):
        if isinstance(message, dict):
            message = {**message, "ms": 0.1, "stream_ms": 0.1}
        return send(message)

    channel.send = forged


for found in gc.get_objects():
    if type(found).__name__ == "Channel" and hasattr(found, "receive"):
        _forge(found)
