PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: venv run test lint format worker migrate

# DEBUG defaults to false in settings; development and the suite turn it on here.
run worker migrate: export DEBUG ?= true
test: export DEBUG = true

$(BIN)/.installed: requirements.txt requirements-dev.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $@

venv: $(BIN)/.installed

migrate: venv
	$(BIN)/python manage.py migrate --no-input

## The product on the embedded database (or DATABASE_URL): migrate, superuser, ingest docs/, worker + web server.
run: migrate
	$(BIN)/python manage.py ensure_superuser
	$(BIN)/python manage.py demo_widget_key --origin http://$(HOST):$(PORT) --origin http://localhost:$(PORT)
	$(BIN)/python manage.py ingest_docs docs/ --app guide --source-type guide
	$(BIN)/python manage.py collectstatic --no-input --verbosity 0
	$(BIN)/python manage.py db_worker & worker=$$!; \
	trap 'kill $$worker 2>/dev/null' EXIT INT TERM; \
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

## The whole test suite.
test: venv
	$(BIN)/python -m pytest

## Format check and lint (ruff, configured in pyproject.toml); `make format` rewrites the tree.
lint: venv
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

format: venv
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

worker: venv
	$(BIN)/python manage.py db_worker
