"""Filters of scans and Filter operators, outside the operators themselves:

    terms.py        the filter-term model (Leaf / AllOf / AnyOf of a pushed
                    filter, comparisons read constant-right, interned keys)
    pruning.py      row groups and pages skipped by footer statistics, page
                    index and bloom filters (ScanPruner)
    page_spans.py   the row spans a page index keeps, remembered per file
    conjunction.py  a conjunction evaluated block by block into one mask,
                    mostly by the kernels of engine/kernels/predicates.py
"""
