"""The queue run loops are sent to; one or more inference worker processes consume it."""

INFERENCE_QUEUE = "inference"
