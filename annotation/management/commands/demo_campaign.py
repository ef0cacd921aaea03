"""Create the demo campaign from the demo world's runs and pre-fill it in part (the
``demo_campaign`` job kind, run here)."""

from jobs.commands import JobCommand


class Command(JobCommand):
    kind_name = "demo_campaign"
    help = (
        "Pool the demo world's four runs at depth 10 into the campaign 'demo-campaign' and "
        "let two simulated annotators judge part of it (--fill), so agreement figures exist at "
        "once and pairs are still left for people to judge. With two of them, a tie on a "
        "doubly labelled pair waits for a third person or an admin's adjudication. Finishes a "
        "campaign a failed run left half-made; does nothing if the campaign is complete."
    )

    def summary(self, result: dict, arguments: dict) -> str:
        if result["done"].startswith("nothing"):
            return f"Campaign {result['campaign']!r} is complete already; keeping it."
        return (
            f"Campaign {result['campaign']!r} ({result['done']}): {result['pairs']} pairs from "
            f"{', '.join(result['runs'])}; {result['labels']} labels pre-filled by "
            f"{result['annotators']} simulated annotators (error rate "
            f"{arguments.get('error_rate', 0.05)}); label set {result['label_set']!r} holds "
            f"{result['positives']} judged positives so far (re-resolve it from the campaigns "
            "page as judging goes on)."
        )
