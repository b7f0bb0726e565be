"""`convert-graph-to-loops`: the graph dialect lowered to kernels of scf/memref/arith/math loops.

Layout: `pass_` (the pass: entry functions in destination-passing style, constants as
globals, views, kernel deduplication), `kernels` (the op -> kernel-builder registry),
one module of kernel builders per op family (`elementwise`, `gemm`, `conv`, `pool`,
`normalization`, `data_movement`), `loops` (the builder helpers they share) and
`interpreter` (runs a lowered module in xDSL's interpreter, for tests and debugging).
"""
