"""A tqdm loop of 32-sample batches at a steady pace; prints its own samples/s at the end."""

import time

from tqdm import tqdm

BATCH = 32
start = 0.0
for step in tqdm(range(120), mininterval=0.05):
    if step == 20:
        start = time.perf_counter()
    time.sleep(0.02)
print(f"TRUTH {100 * BATCH / (time.perf_counter() - start):.3f}")
