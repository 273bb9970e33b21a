"""Python helpers that solbench's embedded interpreter imports (tracer, input
generation, correctness). The C++ side calls them with JSON text in and out."""
