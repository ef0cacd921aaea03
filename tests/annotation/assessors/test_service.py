"""Machine assessors of a campaign: importing them (all or nothing, keys resolved in bulk,
a re-import replacing), their figures beside the humans, the command, and their judgements
never touching a label, a pair, a tally or an export."""

import json
from dataclasses import asdict
from datetime import UTC, datetime

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from annotation.assessors import service as assessors
from annotation.campaign_read.exports import export_to_file
from annotation.campaign_read.labels import load_campaign_labels
from annotation.campaign_read.reporting import campaign_report
from annotation.campaign_read.resolution import resolve_campaign
from annotation.gold import service as gold
from annotation.models import (
    AnnotatorTally,
    Assessor,
    CampaignTally,
    GoldJudgement,
    GoldPair,
    Judgement,
    MachineJudgement,
    Pair,
    QualificationAttempt,
)
from annotation.people.scores import campaign_scores
from annotation.people.service import campaign_people
from retrieval.formats.records import FormatError
from retrieval.models import Caption, RetrievalModel
from retrieval.scoring.circularity import recorded_families

HUMANS = {  # the judged fixture's resolved labels (c2 x v4: a tie, unresolved)
    ("c0", "v0"): 1,
    ("c0", "v1"): 1,
    ("c0", "v2"): 0,
    ("c1", "v1"): 1,
    ("c1", "v2"): 0,
    ("c1", "v3"): 0,
    ("c2", "v2"): 0,
    ("c2", "v3"): 0,
}
POOLED = [*HUMANS, ("c2", "v4")]
GOLD = {("c0", "v5"): 1, ("c1", "v7"): 0, ("c2", "v8"): 1, ("c0", "v6"): 0}
"""Gold pairs not pooled in the judged fixture (its run ranks v0..v4 only)."""
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def with_gold(campaign, tmp_path, pooled=(("c0", "v0"),)):
    """Import :data:`GOLD` as the campaign's gold pairs, and promote the ``pooled`` pairs
    (resolved by the humans) to gold as well."""
    path = tmp_path / "gold.csv"
    path.write_text(
        "caption_key,video_key,label,explanation\n"
        + "".join(
            f"{c},{v},{('irrelevant', 'relevant')[label]},because\n"
            for (c, v), label in GOLD.items()
        ),
        "utf-8",
    )
    gold.import_gold(campaign, path)
    ids = [Pair.objects.get(campaign=campaign, caption__key=c, video__key=v).pk for c, v in pooled]
    if ids:
        gold.promote(campaign, pair_ids=ids)


def write(tmp_path, name, rows):
    path = tmp_path / name
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), "utf-8")
    return path


def rows_of(assessor, pairs, score=0.7, **extra):
    return [
        {"caption": c, "video": v, "assessor": assessor, "score": score, **extra} for c, v in pairs
    ]


def stored(campaign):
    return sorted(
        MachineJudgement.objects.filter(assessor__campaign=campaign).values_list(
            "assessor__name", "pair__caption__key", "pair__video__key", "score", "label"
        )
    )


def test_import_stores_each_assessor_and_returns_a_summary(judged, tmp_path):
    rows = rows_of("clip/L", POOLED[:3], family="clip") + [
        {"caption": "c0", "video": "v0", "assessor": "qwen", "label": "relevant"}
    ]
    result = assessors.import_assessments(judged, write(tmp_path, "m.jsonl", rows))
    assert result == assessors.AssessmentImport(
        campaign=judged.name, file="m.jsonl", assessors=("clip/L", "qwen"), rows=4, pairs=3
    )
    assert dict(Assessor.objects.values_list("name", "family")) == {"clip/L": "clip", "qwen": ""}
    assert stored(judged) == [
        ("clip/L", "c0", "v0", 0.7, ""),
        ("clip/L", "c0", "v1", 0.7, ""),
        ("clip/L", "c0", "v2", 0.7, ""),
        ("qwen", "c0", "v0", None, "relevant"),
    ]


def test_reimporting_an_assessor_replaces_its_judgements(judged, tmp_path):
    assessors.import_assessments(judged, write(tmp_path, "a.jsonl", rows_of("m", POOLED[:3])))
    assessors.import_assessments(judged, write(tmp_path, "o.jsonl", rows_of("other", POOLED[:1])))
    again = write(tmp_path, "b.jsonl", rows_of("m", POOLED[3:4], score=0.1, family="clip"))
    result = assessors.import_assessments(judged, again)
    assert result.replaced == ("m",)
    assert stored(judged) == [("m", "c1", "v1", 0.1, ""), ("other", "c0", "v0", 0.7, "")]
    assert Assessor.objects.get(name="m").source_file == "b.jsonl"
    assert Assessor.objects.get(name="m").family == "clip"


@pytest.mark.parametrize(
    ("last", "field", "message"),
    [
        ({"caption": "c0", "video": "v9"}, "video", "neither a pair pooled in campaign"),
        ({"caption": "nope", "video": "v0"}, "caption", "no caption with key 'nope'"),
        ({"caption": "c0", "video": "nope"}, "video", "no video with key 'nope'"),
        ({"caption": "c0", "video": "v0", "score": 2}, "score", "between 0 and 1"),
    ],
)
def test_a_bad_last_line_leaves_the_database_unchanged(judged, tmp_path, last, field, message):
    assessors.import_assessments(judged, write(tmp_path, "a.jsonl", rows_of("m", POOLED[:2])))
    before = (stored(judged), list(Assessor.objects.values_list("pk", "name", "source_file")))
    rows = (
        rows_of("m", POOLED[5:])
        + rows_of("new", POOLED)
        + [{"assessor": "new", "score": 0.3, **last}]
    )
    path = write(tmp_path, "bad.jsonl", rows)
    with pytest.raises(FormatError) as caught:
        assessors.import_assessments(judged, path)
    assert (caught.value.path, caught.value.line, caught.value.field) == (path, len(rows), field)
    assert message in caught.value.message
    assert (
        stored(judged),
        list(Assessor.objects.values_list("pk", "name", "source_file")),
    ) == before


def test_an_upload_is_named_as_the_user_named_it(judged, tmp_path):
    path = write(tmp_path, "tmp123.jsonl", rows_of("m", [("c0", "v9")]))
    with pytest.raises(FormatError) as caught:
        assessors.import_assessments(judged, path, shown="mine.jsonl")
    assert str(caught.value).startswith("mine.jsonl, line 1, field 'video': ")


def test_keys_are_resolved_in_bulk(judged, tmp_path):
    """The queries an import makes do not grow with its rows, assessors or gold rows."""
    with_gold(judged, tmp_path)
    counts = []
    everything = [*POOLED, *GOLD]
    for name, rows in (
        ("few.jsonl", rows_of("a", POOLED[:1])),
        (
            "many.jsonl",
            rows_of("b", everything) + rows_of("c", everything) + rows_of("d", POOLED[:4]),
        ),
    ):
        with CaptureQueriesContext(connection) as queries:
            assessors.import_assessments(judged, write(tmp_path, name, rows))
        counts.append(len(queries))
    assert counts[0] == counts[1]
    assert MachineJudgement.objects.count() == 1 + 13 + 13 + 4


def test_keys_with_slashes_and_line_separators_resolve(judged, tmp_path):
    key = "c/0\u2028x"
    Caption.objects.filter(dataset=judged.dataset, key="c0").update(key=key)
    rows = [{"caption": key, "video": "v0", "assessor": "org/model\u00e9", "score": 1}]
    result = assessors.import_assessments(judged, write(tmp_path, "m.jsonl", rows))
    assert result.assessors == ("org/model\u00e9",)
    assert stored(judged) == [("org/model\u00e9", key, "v0", 1.0, "")]


def snapshot(campaign, tmp_path, tag):
    """Everything a machine judgement must leave alone: pairs, tallies, the labels read
    model, the report, every label export."""
    labels = load_campaign_labels(campaign)
    exports = {}
    for fmt in ("csv", "jsonl", "raw", "fire-json", "qrels"):
        path = tmp_path / f"{tag}.{fmt}"
        export_to_file(campaign, fmt, path)
        lines = path.read_text().splitlines()
        exports[fmt] = [line for line in lines if '"created"' not in line]
    return {
        "pairs": list(Pair.objects.filter(campaign=campaign).order_by("pk").values()),
        "tallies": list(CampaignTally.objects.filter(campaign=campaign).order_by("shard").values()),
        "annotators": list(
            AnnotatorTally.objects.filter(campaign=campaign).order_by("pk").values()
        ),
        "judgements": Judgement.objects.count(),
        "labels": {
            name: getattr(labels, name).tolist()
            for name in ("pair_index", "annotator_index", "labels", "resolved", "status")
        },
        "report": campaign_report(campaign, resamples=10).to_json(),
        "exports": exports,
        # Gold: its pairs and answers, the annotators' scores on it, qualification.
        "gold": gold.gold_summaries(campaign),
        "gold_export": list(gold.gold_export_rows(campaign)),
        "gold_answers": list(GoldJudgement._base_manager.order_by("pk").values()),
        "attempts": list(QualificationAttempt.objects.order_by("pk").values()),
        "scores": campaign_scores(campaign),
        "people": [
            (person.username, person.qualification, person.score, person.labels)
            for person in campaign_people(campaign, now=NOW).people
        ],
    }


def test_machine_judgements_never_change_labels_pairs_tallies_or_exports(judged, tmp_path):
    with_gold(judged, tmp_path)
    before = snapshot(judged, tmp_path, "before")
    disagreeing = [
        {**row, "label": ("irrelevant", "relevant")[1 - label]}
        for (pair, label) in {**HUMANS, ("c2", "v4"): 0, **GOLD}.items()
        for row in rows_of("loud", [pair], score=float(1 - label))
    ]
    assessors.import_assessments(judged, write(tmp_path, "m.jsonl", disagreeing))
    assert MachineJudgement.objects.filter(gold_pair__isnull=False).count() == len(GOLD)
    assert MachineJudgement.objects.count() == len(POOLED) + len(GOLD)
    after = snapshot(judged, tmp_path, "after")
    assert after == before
    for lines in after["exports"].values():
        assert not any("loud" in line for line in lines)


def test_figures_beside_the_humans(judged, people, tmp_path):
    """A machine that copies the humans agrees perfectly; one that says the opposite
    disagrees perfectly; one that calls everything relevant has no specificity. Gold: the
    promoted pair c0 x v0 (relevant)."""
    pair = Pair.objects.get(campaign=judged, caption__key="c0", video__key="v0")
    gold.promote(judged, pair_ids=[pair.pk])
    rows = []
    for (caption, video), label in HUMANS.items():
        rows.append({"caption": caption, "video": video, "assessor": "copy", "score": label * 0.9})
        rows.append(
            {
                "caption": caption,
                "video": video,
                "assessor": "contrary",
                "label": ("relevant", "irrelevant")[label],
            }
        )
    rows += rows_of("yes", POOLED, score=0.5)
    assessors.import_assessments(judged, write(tmp_path, "m.jsonl", rows))
    page = assessors.campaign_assessors(judged)
    assert (page.gold_pairs, page.resolved_pairs) == (1, 8)
    by_name = {row.name: row.figures for row in page.assessors}
    assert [row.name for row in page.assessors] == ["contrary", "copy", "yes"]
    copy, contrary, yes = by_name["copy"], by_name["contrary"], by_name["yes"]
    assert (copy.kappa, copy.alpha, copy.sensitivity, copy.specificity, copy.auc) == (1.0,) * 5
    assert copy.confusion == ((5, 0), (0, 3)) and copy.gold_accuracy == 1.0
    # p_o = 0, p_e = (5 * 3 + 3 * 5) / 64: kappa = -p_e / (1 - p_e) = -15 / 17
    assert contrary.kappa == pytest.approx(-15 / 17) and contrary.specificity == 0.0
    assert contrary.gold_accuracy == 0.0 and contrary.auc is None
    assert (yes.judged, yes.compared, yes.sensitivity, yes.specificity) == (9, 8, 1.0, 0.0)
    assert yes.kappa == 0.0 and yes.relevant_share == 1.0


def test_reading_the_figures_takes_the_same_queries_for_more_assessors(judged, tmp_path):
    with_gold(judged, tmp_path)
    counts = []
    for names, pairs in ((["a"], POOLED[:1]), (["b", "c", "d"], [*POOLED, *GOLD])):
        rows = [row for name in names for row in rows_of(name, pairs)]
        assessors.import_assessments(judged, write(tmp_path, f"{names[0]}.jsonl", rows))
        with CaptureQueriesContext(connection) as queries:
            page = assessors.campaign_assessors(judged)
        counts.append(len(queries))
    assert [row.figures.judged for row in page.assessors] == [1, 13, 13, 13]
    assert [row.figures.gold for row in page.assessors] == [1, 5, 5, 5]
    assert counts[0] == counts[1]


def test_the_command_prints_json_and_names_errors(judged, tmp_path, capsys):
    path = write(tmp_path, "m.jsonl", rows_of("m", POOLED[:2]))
    call_command("import_assessments", str(path), "--campaign", judged.name, "--format", "json")
    printed = json.loads(capsys.readouterr().out)
    assert printed == asdict(assessors.AssessmentImport(judged.name, "m.jsonl", ("m",), 2, 2)) | {
        "assessors": ["m"],
        "replaced": [],
    }
    call_command("import_assessments", str(path), "--campaign", judged.name)
    assert "Stored 2 machine judgements of 1 assessor (m) on 2 pairs" in capsys.readouterr().out
    bad = write(tmp_path, "bad.jsonl", rows_of("m", [("c0", "v9")]))
    with pytest.raises(CommandError, match=r"bad.jsonl, line 1, field 'video': "):
        call_command("import_assessments", str(bad), "--campaign", judged.name)
    with pytest.raises(CommandError, match="no campaign named"):
        call_command("import_assessments", str(path), "--campaign", "nope")


def test_the_first_bad_line_of_the_file_is_the_one_named(judged, tmp_path):
    rows = rows_of("m", [("c0", "v0"), ("c0", "v9"), ("zz", "v0"), ("c0", "zz")])
    for start, (line, field) in enumerate([(2, "video"), (3, "caption"), (4, "video")]):
        path = write(tmp_path, f"bad{start}.jsonl", [rows[0], *rows[start + 1 :]])
        with pytest.raises(FormatError) as caught:
            assessors.import_assessments(judged, path)
        assert (caught.value.line, caught.value.field) == (line - start, field)
    assert not MachineJudgement.objects.exists() and not Assessor.objects.exists()


def test_a_file_mixing_pooled_and_gold_rows_imports(judged, tmp_path):
    """Unpooled gold pairs are stored as gold judgements; a pooled pair that is also gold
    (c0 x v0, promoted) stays a judgement of the pooled pair."""
    with_gold(judged, tmp_path)
    rows = rows_of("m", [*POOLED[:2], *GOLD], score=0.2) + rows_of("n", [("c1", "v7")])
    result = assessors.import_assessments(judged, write(tmp_path, "mixed.jsonl", rows))
    assert (result.rows, result.pairs, result.gold) == (7, 2, 4)
    on_pairs = MachineJudgement.objects.filter(pair__isnull=False)
    on_gold = MachineJudgement.objects.filter(gold_pair__isnull=False)
    assert sorted(on_pairs.values_list("pair__caption__key", "pair__video__key")) == [
        ("c0", "v0"),
        ("c0", "v1"),
    ]
    assert sorted(
        on_gold.values_list("assessor__name", "gold_pair__caption__key", "gold_pair__video__key")
    ) == sorted([("m", c, v) for c, v in GOLD] + [("n", "c1", "v7")])
    assert not MachineJudgement.objects.filter(pair__isnull=False, gold_pair__isnull=False)


def test_a_row_naming_neither_a_pooled_nor_a_gold_pair_is_refused(judged, tmp_path):
    with_gold(judged, tmp_path)
    rows = rows_of("m", [POOLED[0], ("c0", "v5"), ("c2", "v9")])
    path = write(tmp_path, "bad.jsonl", rows)
    with pytest.raises(FormatError) as caught:
        assessors.import_assessments(judged, path)
    assert (caught.value.path, caught.value.line, caught.value.field) == (path, 3, "video")
    assert "neither a pair pooled in campaign" in caught.value.message
    assert "nor one of its gold pairs" in caught.value.message
    assert not MachineJudgement.objects.exists() and not Assessor.objects.exists()


def test_a_judgement_is_of_exactly_one_pooled_or_gold_pair(judged, tmp_path):
    with_gold(judged, tmp_path)
    assessor = Assessor.objects.create(campaign=judged, name="m")
    pair = Pair.objects.filter(campaign=judged).first()
    gold_pair = GoldPair.objects.filter(campaign=judged).first()
    for pair_id, gold_pair_id in ((None, None), (pair.pk, gold_pair.pk)):
        with pytest.raises(IntegrityError), transaction.atomic():
            MachineJudgement.objects.create(
                assessor=assessor, pair_id=pair_id, gold_pair_id=gold_pair_id, score=0.5
            )
    MachineJudgement.objects.create(assessor=assessor, gold_pair=gold_pair, score=0.5)
    with pytest.raises(IntegrityError), transaction.atomic():
        MachineJudgement.objects.create(assessor=assessor, gold_pair=gold_pair, label="relevant")


def test_gold_accuracy_equals_a_brute_force_count(judged, tmp_path):
    """Random verdicts of three assessors on pooled pairs (some gold) and unpooled gold pairs:
    each one's gold accuracy is its count of verdicts equal to the gold label, over the gold
    pairs it judged, counted here pair by pair."""
    with_gold(judged, tmp_path, pooled=(("c0", "v0"), ("c1", "v3")))
    rng = np.random.default_rng(7)
    rows = []
    for name in ("a", "b", "c"):
        for caption, video in [*POOLED, *GOLD]:
            if rng.random() < 0.2:
                continue
            row = {"caption": caption, "video": video, "assessor": name}
            if rng.random() < 0.5:
                row["score"] = float(rng.random())
            if "score" not in row or rng.random() < 0.5:
                row["label"] = str(rng.choice(["relevant", "irrelevant"]))
            rows.append(row)
    assessors.import_assessments(judged, write(tmp_path, "random.jsonl", rows))
    truth = {
        (c, v): label == "relevant"
        for c, v, label in GoldPair.objects.filter(campaign=judged).values_list(
            "caption__key", "video__key", "label"
        )
    }
    expected = {}
    for row in rows:
        key = (row["caption"], row["video"])
        if key not in truth:
            continue
        verdict = row["label"] == "relevant" if "label" in row else row["score"] >= 0.5
        right, total = expected.get(row["assessor"], (0, 0))
        expected[row["assessor"]] = (right + (verdict == truth[key]), total + 1)
    page = assessors.campaign_assessors(judged)
    assert page.gold_pairs == len(GOLD) + 2
    got = {row.name: (row.figures.gold_correct, row.figures.gold) for row in page.assessors}
    assert got == expected
    for row in page.assessors:
        right, total = expected[row.name]
        assert row.figures.gold_accuracy == pytest.approx(right / total)


def test_the_label_set_made_from_the_campaign_records_its_assessors_families(judged, tmp_path):
    assert resolve_campaign(judged, "without").metadata["assessor_families"] == []
    rows = rows_of("m", POOLED[:2], family="MME") + rows_of("c", POOLED[:1], family="clip")
    rows += rows_of("nameless", POOLED[:1])  # no family: names none
    assessors.import_assessments(judged, write(tmp_path, "m.jsonl", rows))
    made = resolve_campaign(judged, "with")
    assert made.metadata["assessor_families"] == ["clip", "mme"]
    assert recorded_families(made.metadata) == ["clip", "mme"]


def test_the_assessors_table_names_the_campaigns_runs_of_each_family(judged, tmp_path):
    run = judged.campaign_runs.get().run
    RetrievalModel.objects.filter(pk=run.model_id).update(source="encoder", encoder="mme")
    rows = rows_of("a", POOLED[:1], family="MME") + rows_of("b", POOLED[:1], family="clip")
    assessors.import_assessments(judged, write(tmp_path, "m.jsonl", rows))
    page = assessors.campaign_assessors(judged)
    assert {row.name: row.same_family_runs for row in page.assessors} == {
        "a": (run.name,),
        "b": (),
    }
