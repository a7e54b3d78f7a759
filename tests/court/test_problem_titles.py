"""Every problem has a title, derived from its classes' names and docstrings where Model's own
docstring says nothing (KernelBench's level 3 documents only its parameters: "L3 T1 —")."""

import gzip
import importlib
import json

import pytest
from django.apps import apps

from court.validation import problem_title
from tests.conftest import RELEASE_DIR
from tests.court.factories import make_problem

INPUTS = "\ndef get_inputs():\n    return [torch.randn(8)]\n\ndef get_init_inputs():\n    return []\n"


def module(body: str) -> str:
    return "import torch\nimport torch.nn as nn\n\n" + body + INPUTS


def test_models_own_docstring_comes_first():
    assert (
        problem_title(module('class Model(nn.Module):\n    """Adds one."""\n    def forward(self, x):\n        return x + 1\n'))
        == "Adds one."
    )


def test_an_init_docstring_names_the_model():
    source = module(
        "class Model(nn.Module):\n"
        '    def __init__(self, num_classes=1000):\n        """\n        Initialize the VGG16 model.\n\n'
        '        :param num_classes: The number of output classes\n        """\n        super().__init__()\n'
        "    def forward(self, x):\n        return x\n"
    )
    assert problem_title(source) == "VGG16 model"


def test_a_forward_docstring_names_it_where_init_lists_parameters():
    source = module(
        "class Model(nn.Module):\n"
        '    def __init__(self, c):\n        """\n        :param c: channels\n        """\n        super().__init__()\n'
        '    def forward(self, x):\n        """\n        Forward pass through the RegNet model.\n        """\n        return x\n'
    )
    assert problem_title(source) == "RegNet model"


def test_the_classes_it_is_built_from_name_it_where_no_docstring_does():
    source = module(
        "class FireModule(nn.Module):\n    def forward(self, x):\n        return x\n\n"
        "class Model(nn.Module):\n    def forward(self, x):\n        return FireModule()(x)\n"
    )
    assert problem_title(source) == "Network of FireModule"


def test_the_layers_it_makes_name_it_as_a_last_resort():
    source = module(
        "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.net = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8))\n"
        "    def forward(self, x):\n        return self.net(x)\n"
    )
    assert problem_title(source) == "Linear and ReLU layers"


def test_every_problem_of_the_release_gets_a_title(h100_release):
    with gzip.open(RELEASE_DIR / h100_release.name, "rt", encoding="utf-8") as lines:
        untitled = [(row["level_id"], row["task_id"]) for row in map(json.loads, lines) if not problem_title(row["ref_code"])]
    assert untitled == []


@pytest.mark.django_db
def test_the_migration_titles_untitled_problems_and_leaves_the_others():
    untitled = make_problem(scale=2, origin="kernelbench", level=3, task=1, title="")
    titled = make_problem(scale=3, origin="kernelbench", level=3, task=2, title="Chosen by staff")
    migration = importlib.import_module("court.migrations.0008_titles_from_classes_and_docstrings")
    migration.title_untitled_problems(apps, None)
    untitled.refresh_from_db()
    titled.refresh_from_db()
    assert (untitled.title, titled.title) == ("Scales by 2.", "Chosen by staff")
