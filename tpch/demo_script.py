"""Print the demo script: views over a TPC-H directory, then Q1, Q3 and Q6."""

import sys

from tpch.queries import query_text, view_statements


def main(data_dir: str) -> None:
    for stmt in view_statements(data_dir):
        print(stmt + ";")
    for q in (1, 3, 6):
        print(f"-- TPC-H Q{q}")
        print(query_text(q).strip())


if __name__ == "__main__":
    main(sys.argv[1])
