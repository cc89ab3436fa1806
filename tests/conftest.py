import os

# gensim's reference computations are many small BLAS calls: one thread each is faster than two
# threads fighting a busy 2-core machine (measured 10-15x slower with the default).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
