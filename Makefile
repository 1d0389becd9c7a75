# The README's commands. Each one sets up its own environment on a fresh machine.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
PIP     := $(BIN)/pip install -q -c constraints.txt
EXTRAS  ?= dev,llm,local,train
# Nothing is ever fetched from a model hub: the tests build their tiny model offline.
export HF_HUB_OFFLINE := 1
export HF_HUB_DISABLE_TELEMETRY := 1

.PHONY: test reproduce venv sync-check style-check nbtest pytest bench lab clean

$(BIN)/.stamp-$(EXTRAS): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(PIP) -e ".[$(EXTRAS)]"
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	@! $(BIN)/pip list 2>/dev/null | grep -i '^nvidia-' || (echo "a CUDA build was pulled in" && false)
	touch $@

venv: $(BIN)/.stamp-$(EXTRAS)

## make test: notebooks in sync with the package, notebook tests, then pytest.
test: venv sync-check style-check nbtest pytest

sync-check: venv
	$(BIN)/python tools/sync_check.py

style-check: venv
	$(BIN)/python tools/style_check.py

nbtest: venv
	$(BIN)/python tools/nbtest.py

pytest: venv
	$(BIN)/python -m pytest tests

## make reproduce: the main job on the embedded default data.
reproduce: venv
	$(BIN)/bilateral reproduce --profile offline

## make bench: the engine's speed, then the same pairings against NegMAS (installs the optional extra `bench`).
bench:
	$(MAKE) venv EXTRAS=$(EXTRAS),bench
	$(BIN)/bilateral bench
	$(BIN)/bilateral bench --vs negmas

## make lab: the notebooks in JupyterLab, from the project's .venv.
lab: venv
	$(BIN)/jupyter lab nbs

clean:
	rm -rf $(VENV) build dist *.egg-info
