"""Every job kind's arguments are checked by its form before anything is queued.

Whichever door a job comes through (the jobs page, ``manage.py jobs submit``, the upload
pages and the API, which all go through :func:`jobs.runner.submit`), an out-of-range or
wrong-type argument is a field error naming the field, and no job row is written.
"""

import pytest
import torch
from django.core.management import CommandError, call_command

from jobs import runner
from jobs.models import Job
from jobs.registry import get_kind, kinds
from retrieval.datasets.demo.service import create_demo_dataset
from retrieval.datasets.uploads import input_name, new_input_folder
from retrieval.encoders.service import register_encoder
from tests.factories import make_campaign, random_run

HUGE = str(10**30)
OUT_OF_RANGE_INTS = [HUGE, str(-(10**30)), str(2**31), str(2**63), str(-(2**63)), "-1"]
WRONG_TYPE_INTS = ["abc", "1.5", "1e3", "nan", "0x10", "[1]"]


@pytest.fixture
def world(db, settings, tmp_path):
    """A demo dataset with an encoder model and a run, a campaign, and an uploaded file."""
    settings.FIREPOOL_JOB_INPUT_DIR = tmp_path / "uploads"
    dataset = create_demo_dataset(name="args", n_videos=12, seed=2, workers=1)
    register_encoder(dataset, "enc", "mme")
    random_run(dataset, "r1", seed=1)
    campaign = make_campaign()
    upload = new_input_folder() / "captions"
    upload.write_text('{"video_id": "v", "caption_id": "c", "caption": "x", "split": "test"}\n')
    return {
        "embed": {"dataset": "args", "model": "enc", "device": "cpu"},
        "train": {"dataset": "args", "model": "enc", "epochs": "1", "device": "cpu"},
        "predict": {"dataset": "args", "model": "enc", "k": "5"},
        "proxies": {"dataset": "args", "proxy": "bow"},
        "rescore": {"dataset": "args"},
        "score_run": {"dataset": "args", "run": "r1"},
        "import_dataset": {"name": "new", "format": "jsonl", "captions": input_name(upload)},
        "build_model": {"dataset": "args", "model": "enc", "k": "5", "device": "cpu"},
        "media": {"dataset": "args"},
        "pool": {"dataset": "args", "name": "pp", "runs": "r1", "depth": "2"},
        "export": {"campaign": campaign.name, "format": "qrels"},
        "gold_import": {"campaign": campaign.name, "file": input_name(upload)},
        "demo_campaign": {"dataset": "args", "name": "demo-c"},
        "refit-policy": {"campaign": campaign.name},
        "fit-predictor": {"campaign": str(campaign.pk), "seed": "3"},
        "active-stage": {"campaign": campaign.name, "draw": "on", "seed": "3"},
        "campaign-figures": {"campaign": campaign.name},
        "label-set-figures": {"dataset": "args"},
    }


BAD = {
    "embed": {"batch_size": OUT_OF_RANGE_INTS + WRONG_TYPE_INTS, "device": ["gpu", "cuda:0"]},
    "train": {
        "seed": OUT_OF_RANGE_INTS + WRONG_TYPE_INTS,
        "epochs": OUT_OF_RANGE_INTS + ["0", *WRONG_TYPE_INTS],
        "threshold": ["-0.1", "1.5", "nan", "inf", "abc", HUGE],
        "device": ["gpu"],
        "relevance": ["nope"],
    },
    "predict": {"k": OUT_OF_RANGE_INTS + ["0", *WRONG_TYPE_INTS], "index": ["flat"]},
    "proxies": {"proxy": ["nope"], "rebuild": ["maybe", "2", "-1", HUGE]},
    "rescore": {"only_labelled": ["maybe", "2", HUGE], "labels": ["ghost"], "runs": ["ghost"]},
    "score_run": {"run": ["ghost", ""], "labels": ["ghost"]},
    "import_dataset": {
        "format": ["nope"],
        "captions": ["../etc/passwd", "ghost"],
        "skip_broken": ["maybe", "2", HUGE],
    },
    "media": {"dataset": ["ghost", "", HUGE]},
    "build_model": {
        "seed": OUT_OF_RANGE_INTS + WRONG_TYPE_INTS,
        "k": OUT_OF_RANGE_INTS + ["0", *WRONG_TYPE_INTS],
        "epochs": OUT_OF_RANGE_INTS + ["0", *WRONG_TYPE_INTS],
        "device": ["gpu"],
    },
    "pool": {
        "depth": OUT_OF_RANGE_INTS + ["0", *WRONG_TYPE_INTS],
        "seed": OUT_OF_RANGE_INTS + WRONG_TYPE_INTS,
        "queries": OUT_OF_RANGE_INTS + ["0", *WRONG_TYPE_INTS],
        "budget": OUT_OF_RANGE_INTS + ["0", *WRONG_TYPE_INTS],
        "lease_seconds": OUT_OF_RANGE_INTS + WRONG_TYPE_INTS,
        "max_labels": OUT_OF_RANGE_INTS + WRONG_TYPE_INTS,
        "second_label_rate": ["-0.1", "1.5", "nan", "inf", HUGE],
        "gold_rate": ["-0.1", "1.5", "nan", "inf", HUGE],
        "qualification": OUT_OF_RANGE_INTS + WRONG_TYPE_INTS,
        "qualification_threshold": ["0", "1.5", "nan"],
        "show_roles": ["maybe", "2", HUGE],
        "judging_order": ["nope"],
        "policy": ["nope", "FIRE"],
        "confidence": ["0.2", "1", "nan", "inf", "abc", HUGE],
        "speed_floor": ["-1", "nan", "inf", HUGE],
        "gold": ["../etc/passwd", "ghost"],
        "runs": ["ghost", "r1,r1"],
    },
    "export": {"format": ["nope"], "campaign": ["ghost"]},
    "gold_import": {"campaign": ["ghost", ""], "file": ["../etc/passwd", "ghost", ""]},
    "demo_campaign": {"dataset": ["ghost", ""], "name": ["", "x" * 201]},
    "refit-policy": {"campaign": ["ghost", ""]},
    "fit-predictor": {"campaign": ["ghost", "", "0"], "seed": OUT_OF_RANGE_INTS + WRONG_TYPE_INTS},
    "active-stage": {"campaign": ["ghost", "", HUGE], "seed": OUT_OF_RANGE_INTS + WRONG_TYPE_INTS},
    "campaign-figures": {"campaign": ["ghost", "", HUGE]},
    "label-set-figures": {"dataset": ["ghost", ""], "labels": ["ghost", HUGE]},
}


def test_every_kind_is_covered():
    real = {kind.name for kind in kinds() if not kind.name.startswith("test-")}
    assert real == set(BAD)


@pytest.mark.django_db
def test_the_valid_arguments_are_accepted(world):
    for kind, data in world.items():
        runner.check_arguments(get_kind(kind), data)


@pytest.mark.django_db
@pytest.mark.parametrize("kind", sorted(BAD))
def test_bad_arguments_are_refused_with_the_field_before_queueing(world, kind):
    for field, values in BAD[kind].items():
        for value in values:
            with pytest.raises(runner.JobError) as refused:
                runner.submit(kind, {**world[kind], field: value})
            assert str(refused.value).startswith(f"{kind}: "), (field, value)
            assert field in str(refused.value) or "__all__" in str(refused.value), (
                field,
                value,
                str(refused.value),
            )
    assert not Job.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(("text", "expected"), [("0", False), ("no", False), ("off", False),
    ("false", False), ("", False), ("1", True), ("yes", True), ("on", True), ("True", True)])  # fmt: skip
def test_a_flag_means_what_it_says(world, text, expected):
    """``rebuild=0`` or ``only_labelled=no`` from the command line is False, not True."""
    assert (
        runner.check_arguments(get_kind("proxies"), {**world["proxies"], "rebuild": text}).get(
            "rebuild", False
        )
        is expected
    )
    pool = runner.check_arguments(get_kind("pool"), {**world["pool"], "show_roles": text})
    assert pool.get("show_roles", False) is expected


@pytest.mark.django_db
@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_without_cuda_is_a_field_error_unless_a_gpu_worker_runs_the_job(world, settings):
    settings.FIREPOOL_GPU_QUEUE = False
    for kind in ("embed", "train", "build_model"):
        with pytest.raises(runner.JobError, match="device: torch has no CUDA device"):
            runner.submit(kind, {**world[kind], "device": "cuda"})
    assert not Job.objects.exists()
    settings.FIREPOOL_GPU_QUEUE = True  # the job goes to a GPU machine's worker
    for kind in ("embed", "train", "build_model"):
        assert runner.check_arguments(get_kind(kind), {**world[kind], "device": "cuda"})


@pytest.mark.django_db
@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_the_commands_refuse_cuda_and_odd_seeds_too(world):
    """The train command checks its options with the train job's form."""
    with pytest.raises(CommandError, match="device: torch has no CUDA device"):
        call_command("train", dataset="args", model="enc", device="cuda", verbosity=0)
    with pytest.raises(
        CommandError, match="seed: Ensure this value is less than or equal to 2147483647"
    ):
        call_command("train", dataset="args", model="enc", seed=10**30, verbosity=0)
