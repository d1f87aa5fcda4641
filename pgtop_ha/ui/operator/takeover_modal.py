"""The switchover (or, with no leader, failover) dialog: candidates judged, name typed, progress."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from pgtop_ha.actions.results import ActionResult, Progress
from pgtop_ha.judge.view import Candidate, TakeoverPlan
from pgtop_ha.ui.format import count, human_bytes, shown
from pgtop_ha.ui.operator.modal_base import OperatorModal, plain

RunTakeover = Callable[[str, datetime | None, Progress], Awaitable[ActionResult]]
_RELATIVE = re.compile(r"^\+(\d+)\s*([smh])$")


def parse_when(text: str, now: datetime) -> datetime | None:
    """An optional schedule: blank (now), '+15m', or ISO 8601 (local time when no zone is given)."""
    text = text.strip()
    if not text:
        return None
    match = _RELATIVE.match(text)
    if match:
        unit = {"s": "seconds", "m": "minutes", "h": "hours"}[match.group(2)]
        return now + timedelta(**{unit: int(match.group(1))})
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"scheduled time {text!r} not understood; write +15m or 2025-06-01T03:00+00:00"
        ) from None
    if when.tzinfo is None:
        when = when.astimezone()
    if when <= now:
        raise ValueError(f"scheduled time {text} is in the past; leave it empty for now")
    return when


NAME_COLUMN = 12  # the dialog's names' column at its narrowest


def name_width(candidates: Sequence[Candidate]) -> int:
    """The names' column in the dialog: the longest name shown, at least NAME_COLUMN."""
    return max([NAME_COLUMN, *(len(shown(c.name, 64)) for c in candidates)])


def candidate_line(c: Candidate, width: int = NAME_COLUMN) -> str:
    """One candidate as the dialog lists it: verdict, facts, then reasons or warnings."""
    # Names, roles, states and reasons (which quote errors) come from servers: shown() each.
    verdict = "ELIGIBLE" if c.eligible else "BLOCKED "
    lag = "lag ?" if c.lag_bytes is None else f"lag {human_bytes(c.lag_bytes)}"
    tl = count(c.timeline) if c.timeline else "?"
    role, state = shown(c.role or "?", 32), shown(c.state or "?", 32)
    # ``width``: the longest name's, so the verdicts line up ("127.0.0.1:27622" beside "node1").
    facts = f"{shown(c.name, 64):<{width}} {verdict} {role}, {state}, tl {tl}, {lag}"
    why = shown("; ".join(c.reasons or c.warnings))
    return f"{facts}\n    {why}" if why else facts


class TakeoverModal(OperatorModal):
    """Pick a candidate (the healthiest preselected), type the cluster name, Enter: it runs."""

    AUTO_FOCUS = "#confirm"
    BINDINGS = [
        Binding("up", "move(-1)", "Previous candidate", show=False),
        Binding("down", "move(1)", "Next candidate", show=False),
    ]

    def __init__(
        self,
        plan: TakeoverPlan,
        confirm_word: str,
        run: RunTakeover,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        """Show ``plan``; confirming runs ``run(candidate, scheduled_at, progress)``."""
        super().__init__()
        self.plan = plan
        self.confirm_word = confirm_word
        self._run = run
        self._now = now

    def compose(self) -> ComposeResult:
        """Title, notes, candidates, optional schedule, confirmation and status."""
        plan = self.plan
        word = shown(self.confirm_word)
        if plan.kind == "switchover":
            title = f"Switchover of {word}: leader {shown(plan.leader or '?', 64)}"
        else:
            title = f"Failover of {word}: there is no leader"
        # Every Static here may show a server's string: plain() (cleaned, never markup).
        with Vertical(id="dialog"):
            yield plain(title, id="title")
            if plan.notes:
                yield plain("\n".join(shown(note) for note in plan.notes), id="notes")
            # No option ids: two members may carry the same name, and an id must be unique.
            width = name_width(plan.candidates)
            options = [Option(candidate_line(c, width), disabled=not c.eligible) for c in plan.candidates]
            yield OptionList(*options, id="candidates", markup=False)
            yield plain(id="choice")
            if plan.kind == "switchover" and not plan.paused:
                yield Static("When (optional: empty = now, +15m, or ISO time):", classes="hint")
                yield Input(placeholder="now", id="when")
            yield plain(
                f"Type {word} and press Enter to {plan.kind} to the highlighted candidate; Esc to cancel.",
                classes="hint",
            )
            yield Input(placeholder=word, id="confirm")
            yield plain(id="status")

    def on_mount(self) -> None:
        """Preselect the default (healthiest eligible) candidate."""
        options = self.query_one("#candidates", OptionList)
        names = [c.name for c in self.plan.candidates]
        if self.plan.default in names:
            options.highlighted = names.index(self.plan.default)
        if self.plan.default is None:
            self.say("No eligible candidate: Patroni would refuse (see the reasons above).")
        self._show_choice()

    def _show_choice(self) -> None:
        # Say the choice in words: a highlight alone is invisible without colour.
        chosen = self.chosen
        source = shown(self.plan.leader or "(no leader)", 64)
        if chosen is None:
            text = "Chosen: none eligible"
        else:
            default = " (default: healthiest eligible)" if chosen == self.plan.default else ""
            text = f"Chosen: {self.plan.kind} {source} → {shown(chosen, 64)}{default}"
        self.query_one("#choice", Static).update(text)

    def action_move(self, step: int) -> None:
        """Up/Down pick the previous/next candidate while typing the confirmation."""
        options = self.query_one("#candidates", OptionList)
        if options.has_focus or options.disabled:
            return
        if step > 0:
            options.action_cursor_down()
        else:
            options.action_cursor_up()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        """Keep the 'Chosen:' line in step with the highlight."""
        event.stop()
        self._show_choice()

    @property
    def chosen(self) -> str | None:
        """The highlighted candidate's name, if it is eligible."""
        options = self.query_one("#candidates", OptionList)
        index = options.highlighted
        if index is None or not 0 <= index < len(self.plan.candidates):
            return None
        candidate = self.plan.candidates[index]
        return candidate.name if candidate.eligible else None

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """Enter on a candidate moves on to the confirmation."""
        event.stop()
        self.query_one("#confirm", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in either input: check everything, then run."""
        event.stop()
        if self.running or self.result is not None:
            return
        if self.query_one("#confirm", Input).value.strip() != self.confirm_word:
            self.say(f"Type the cluster name {self.confirm_word} exactly to confirm.", fresh=True)
            self.query_one("#confirm", Input).focus()
            return
        candidate = self.chosen
        if candidate is None:
            self.say("Highlight an ELIGIBLE candidate first.", fresh=True)
            return
        when: datetime | None = None
        if self.query("#when"):
            try:
                when = parse_when(self.query_one("#when", Input).value, self._now())
            except ValueError as exc:
                self.say(str(exc), fresh=True)
                return
        for widget in self.query("Input, OptionList"):
            widget.disabled = True
        self.say(f"{self.plan.kind} to {candidate} started", fresh=True)
        self.launch(self._run(candidate, when, self.say))
