import os

import torch

# gensim's reference computations are many small BLAS calls: one thread each is faster than two
# threads fighting a busy 2-core machine (measured 10-15x slower with the default).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# Without a GPU, our Triton kernel runs under Triton's interpreter. Triton reads this when a kernel is
# decorated, at the first import of engine.efficiency.triton_flash, which the app tests reach before the
# kernel's own tests: so it is set here, before any test module is imported.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
