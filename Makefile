# Everything starts from nothing: `make certify` and `make test` each build .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TORCH  := torch==2.13.0
JOBS   ?= 2

.PHONY: certify test test-slow coverage coverage-kit bench train venv clean

venv: $(STAMP)

# torch first, from its CPU build (the `planner` extra would otherwise pull the default build, with CUDA)
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet $(TORCH)
	$(BIN)/pip install --quiet -e '.[planner,openai,serve,test]'
	touch $(STAMP)

## Certify the reference implementation with the kit (the main job): the whole pipeline, planner and
## compiler; PL-INVARIANT is hard for the reference.
certify: $(STAMP)
	$(BIN)/codemode certify --role pipeline --cmd '$(BIN)/codemode plan --js' --invariant hard --report certify-report.json --junit certify-junit.xml

## The kit's own tests (slow fuzzing excluded).
test: $(STAMP)
	$(BIN)/pytest -n $(JOBS) -m 'not slow'

## The same tests under branch coverage of the three packages (on Python 3.11 the tracer makes the run
## about two and a half times as long, so the default run leaves it out).
coverage: $(STAMP)
	$(BIN)/pytest -n $(JOBS) -m 'not slow' --cov --cov-report=term:skip-covered

test-slow: $(STAMP)
	$(BIN)/pytest -n $(JOBS) -m slow

## Which branches of the reference compiler and planner a certification of the reference never reaches:
## each is a blind spot of some clause's generator (see README, "Coverage as evidence").
coverage-kit: $(STAMP)
	$(BIN)/python scripts/coverage_kit.py

bench: $(STAMP)
	$(BIN)/codemode bench js
	$(BIN)/codemode bench plan --contended
	$(BIN)/codemode bench fuzz
	$(BIN)/codemode bench openai
	$(BIN)/codemode bench collector

## Rebuild the shipped weights of the reference model (fixed seed, CPU, under 30 minutes on 2 cores).
train: $(STAMP)
	$(BIN)/codemode train --out reference/weights/tiny_codemode.pt

clean:
	rm -rf $(VENV) certify-report.json certify-junit.xml .hypothesis .pytest_cache .coverage
