# The two commands of the README: `make run` and `make test`. Both create .venv on first use;
# later runs skip the install unless pyproject.toml changed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint-vault bench clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@touch $(STAMP)

run: $(STAMP)
	@$(BIN)/vaulttools tui vault

test: $(STAMP)
	@$(BIN)/python -m pytest -q

lint-vault: $(STAMP)
	@$(BIN)/vaulttools lint vault

bench: $(STAMP)
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test,bench]'
	@$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
