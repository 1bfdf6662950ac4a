"""enqueue(), consumer loop and XAUTOCLAIM reclaim."""
