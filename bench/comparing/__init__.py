"""``bench/compare.py``'s parts, one module each (``basic``, ``workload``, ``scale``,
``outage``, ``express``), on what they share: the systems and measures (``systems``), the
observers (``observing``), the objects applied (``objects``), the figures (``figures``) and the
measuring of whole minutes (``running``)."""
