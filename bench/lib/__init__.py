"""What every benchmark does the same way: progress lines and the machine's load (``output``),
percentiles (``statistics``) and plots (``plotting``).

The benchmarks run as scripts (``python bench/<name>.py``), so this package is imported as
``lib`` from the script's own folder.
"""
