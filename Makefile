# Quick start: `make demo` and `make test` each set themselves up on a fresh machine.
PYTHON ?= $(shell for p in python3.13 python3.12 python3.11 python3; do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null && { echo $$p; break; }; done)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test unit integration lint format typecheck check bench clean constraints

# Setup reports on stderr only, so that `make demo`'s stdout is the replies and nothing else.
$(STAMP): pyproject.toml constraints.txt
	@test -n "$(PYTHON)" || { echo "baton needs Python 3.11 or newer" >&2; exit 1; }
	@echo "baton: installing into $(VENV) (once)" >&2
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) >&2
	@$(BIN)/python -m pip install --quiet --upgrade pip >&2
	@$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev,postgres,embedded]' >&2
	@touch $(STAMP)

# stdout: one Reply per line (JSON Lines), nothing else; progress goes to stderr.
demo: $(STAMP)
	@$(BIN)/baton demo

# Two processes by default, a test file at a time each, each with its own brokers
# (tests/fixtures/brokers.py); TEST_WORKERS=0 runs the suite in this one process.
TEST_WORKERS ?= 2

test: $(STAMP)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

unit: $(STAMP)
	$(BIN)/python -m pytest -q tests/unit

integration: $(STAMP)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile tests/integration

lint: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

typecheck: $(STAMP)
	$(BIN)/mypy

check: lint typecheck

bench: $(STAMP)
	$(BIN)/baton bench

clean:
	rm -rf $(VENV) .baton .pytest_cache .mypy_cache .ruff_cache

# Re-pin every dependency after changing pyproject.toml: the versions the suite last passed with.
constraints: $(STAMP)
	@{ echo "# Every dependency's version, as the suite last passed with (make constraints)."; \
	  $(BIN)/python -m pip freeze --exclude-editable | grep -v '^baton-kafka'; } > constraints.txt
