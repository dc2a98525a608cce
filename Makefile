# pqdb: `make demo` sets everything up in .venv and runs real queries;
# `make test` runs the whole suite (slow cases included).  Installing compiles
# the numba kernels ahead (tpch/precompile.py), so first queries do not.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO_SF ?= 0.1
DEMO_DIR := data/sf$(DEMO_SF)

.PHONY: install demo test test-fast bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@# compile the numba kernels ahead, 2 processes, into numba's cache (tpch/precompile.py)
	$(BIN)/python -m tpch.precompile --jobs 2 || echo "pqdb: precompiling failed; kernels compile on first use"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/pqdb-tpch generate --sf $(DEMO_SF) --out $(DEMO_DIR)
	@$(BIN)/python -m tpch.demo_script $(DEMO_DIR) > $(DEMO_DIR)/demo.sql
	@echo "== pqdb -c: a query straight on a Parquet file"
	$(BIN)/pqdb --timer -c "SELECT l_returnflag, count(*) AS n FROM '$(DEMO_DIR)/lineitem.parquet' GROUP BY 1 ORDER BY 1"
	@echo "== pqdb $(DEMO_DIR)/demo.sql: TPC-H Q1, Q3, Q6 over views"
	$(BIN)/pqdb --timer $(DEMO_DIR)/demo.sql
	@echo "== pqdb-tpch run: validated against the expected answers, timed next to DuckDB"
	$(BIN)/pqdb-tpch run --sf $(DEMO_SF) --data $(DEMO_DIR) --queries 1,3,6 --repeat 3

# one pytest worker per core (pytest-xdist), a test file per worker at a time
PYTEST := $(BIN)/python -m pytest -q -n auto --dist loadfile

test: $(STAMP)
	$(PYTEST)

test-fast: $(STAMP)
	$(PYTEST) -m "not slow"

clean:
	rm -rf $(VENV) data .pytest_cache .hypothesis
