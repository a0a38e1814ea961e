"""nerve top: a live monitor of every channel (textual).

Per channel: message rate (Hz) and bandwidth over the last ``--window``
seconds (from the channel's counters: messages published and bytes
published), average message size over the window (the last size read when
nothing was published), age of the newest message, messages published in
all, messages the monitor itself missed, the type and the geometry.

"history": how long the ring keeps a message at the current rate and
bandwidth (slots / rate, or data ring / bandwidth, whichever is shorter): a
reader that falls further behind than this loses messages. "procs": the
processes that have the channel open, writers (W) and readers (R), from
/proc as ``nerve who`` finds them.

The monitor's own losses (``Row.missed``): the monitor reads every message of every channel
in next-unseen order with zero-copy views (no payload is copied), at most
``--read-budget`` per channel and refresh, and counts those a writer
overwrote before it got to them (``Message.missed``) plus those overwritten
while it looked at them. It is what a reader as fast as the monitor would
lose: 0 on a channel whose ring is large enough for its rate.

Keys: ``/`` filter (glob or substring), ``escape`` clear filter, ``s`` next
sort column, ``r`` reverse order, clicking a column header sorts by it,
``q`` or Ctrl-C quit.
"""

from __future__ import annotations

import argparse
import collections
import fnmatch
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Deque, Dict, List, Optional, Sequence, Tuple

import nerve

from .. import options
from .._common import human_age, human_bytes
from .._text import escape

if TYPE_CHECKING:  # textual is imported when the application runs
    from textual.widgets import DataTable, Input

PROG = "nerve top"


@dataclass
class Row:
    """What the monitor shows of one channel."""

    name: str
    type: str = ""
    encoding: str = ""
    slots: int = 0
    data_size: int = 0
    total: int = 0          # messages published (head_seq)
    rate: float = 0.0       # messages per second over the window
    bandwidth: float = 0.0  # bytes per second over the window
    size: float = 0.0       # average message size over the window
    age_ns: Optional[int] = None  # age of the newest message
    missed: int = 0         # messages the monitor missed
    read: int = 0           # messages the monitor read
    error: Optional[str] = None
    writers: int = 0        # processes with a writable mapping (nerve who)
    readers: int = 0        # processes with a read-only mapping

    @property
    def history_s(self) -> Optional[float]:
        """Seconds of messages the ring holds at the current rate."""
        spans = []
        if self.rate > 0:
            spans.append(self.slots / self.rate)
        if self.bandwidth > 0:
            spans.append(self.data_size / self.bandwidth)
        return min(spans) if spans else None
    bridge: str = ""        # "export", "import HOST" (nerve bridge on this host)


@dataclass
class _State:
    ch: Optional[nerve.Channel]
    created: int
    type: str = ""
    encoding: str = ""
    history: Deque[Tuple[int, int, int]] = field(default_factory=collections.deque)
    missed: int = 0
    read: int = 0
    last_size: int = 0


class Monitor:
    """The numbers behind ``nerve top``: ``sample()`` returns one
    :class:`Row` per channel matching ``patterns`` (all when empty).
    ``clock`` gives CLOCK_MONOTONIC nanoseconds (injectable for tests)."""

    def __init__(
        self,
        patterns: Sequence[str] = (),
        window_s: float = 2.0,
        read_budget: int = 10000,
        clock: Callable[[], int] = nerve.now_ns,
    ) -> None:
        self.patterns = list(patterns)
        self.window_ns = int(window_s * 1e9)
        self.read_budget = read_budget
        self.clock = clock
        self._states: Dict[str, _State] = {}
        self._who: Dict[str, Tuple[int, int]] = {}
        self._who_at: Optional[int] = None

    def _matches(self, name: str) -> bool:
        return not self.patterns or any(fnmatch.fnmatchcase(name, p) for p in self.patterns)

    def _open(self, info: nerve.ChannelInfo) -> _State:
        try:
            ch = nerve.open(info.name)
        except nerve.Error:
            return _State(None, info.created_ns)
        meta = ch.metadata
        # Count what is missed from now on, not what was gone before.
        try:
            ch.seek(ch.stat().head_seq)
        except nerve.Error:
            ch.close()
            return _State(None, info.created_ns)
        return _State(ch, info.created_ns, meta.type or "", meta.encoding or "")

    def _drain(self, st: _State) -> None:
        """Read every new message (views: no copy), counting the missed."""
        ch = st.ch
        assert ch is not None
        for _ in range(self.read_budget):
            try:
                with ch.view() as msg:
                    if msg is None:
                        return
                    st.missed += msg.missed
                    st.last_size = msg.size
                    st.read += 1
            except nerve.StaleView:
                st.missed += 1  # overwritten while the monitor looked at it
            except nerve.Error:
                return

    def _procs(self) -> Dict[str, Tuple[int, int]]:
        """Writers and readers per channel (nerve who's /proc scan, at most
        every 2 s: it reads every process's maps)."""
        now = self.clock()
        if self._who_at is None or now - self._who_at >= 2_000_000_000:
            from .who import scan, summary

            self._who = summary(scan(self.patterns))
            self._who_at = now
        return self._who

    def sample(self) -> List[Row]:
        now = self.clock()
        rows = []
        seen = set()
        procs = self._procs()
        roles = _bridge_roles()
        for info in nerve.list_channels():
            if not self._matches(info.name):
                continue
            seen.add(info.name)
            if info.error is not None:
                rows.append(Row(info.name, error=info.error))
                continue
            st = self._states.get(info.name)
            if st is None or st.created != info.created_ns:
                if st is not None and st.ch is not None:
                    st.ch.close()
                st = self._states[info.name] = self._open(info)
            if st.ch is not None:
                self._drain(st)
            h = st.history
            h.append((now, info.head_seq, info.bytes_total))
            while len(h) > 2 and now - h[1][0] >= self.window_ns:
                h.popleft()
            t0, n0, b0 = h[0]
            dt = (now - t0) / 1e9
            dn = info.head_seq - n0
            db = info.bytes_total - b0
            row = Row(
                name=info.name, type=st.type, encoding=st.encoding,
                slots=info.slots, data_size=info.data_size, total=info.head_seq,
                rate=dn / dt if dt > 0 else 0.0,
                bandwidth=db / dt if dt > 0 else 0.0,
                size=db / dn if dn > 0 else float(st.last_size),
                age_ns=max(now - info.newest_time_ns, 0) if info.newest_time_ns else None,
                missed=st.missed, read=st.read,
                error=None if st.ch is not None else "cannot open",
                writers=procs.get(info.name, (0, 0))[0], readers=procs.get(info.name, (0, 0))[1],
                bridge=roles.get(info.name, ""),
            )
            rows.append(row)
        for name in list(self._states):
            if name not in seen:  # removed
                st = self._states.pop(name)
                if st.ch is not None:
                    st.ch.close()
        return rows

    def close(self) -> None:
        for st in self._states.values():
            if st.ch is not None:
                st.ch.close()
        self._states.clear()


def _bridge_roles() -> Dict[str, str]:
    """Channels that a `nerve bridge` of this host exports or imports
    (docs/bridge.md; its registry files in /dev/shm)."""
    try:
        from ..bridge.registry import roles
    except ImportError:  # the bridge's dependencies are not installed
        return {}
    return roles()


# Columns: (title, sort key, cell text).
COLUMNS: List[Tuple[str, Callable[[Row], object], Callable[[Row], str]]] = [
    ("channel", lambda r: r.name, lambda r: escape(f"{r.name} ({r.bridge})" if r.bridge else r.name)),
    ("rate Hz", lambda r: r.rate, lambda r: f"{r.rate:.1f}"),
    ("bandwidth", lambda r: r.bandwidth, lambda r: f"{human_bytes(r.bandwidth)}/s"),
    ("size", lambda r: r.size, lambda r: human_bytes(r.size)),
    ("age", lambda r: -1 if r.age_ns is None else r.age_ns, lambda r: human_age(r.age_ns)),
    ("total", lambda r: r.total, lambda r: str(r.total)),
    ("history", lambda r: r.history_s or 0.0,
     lambda r: "-" if r.history_s is None else human_age(int(r.history_s * 1e9))),
    ("procs", lambda r: (r.writers, r.readers), lambda r: f"W{r.writers} R{r.readers}"),
    # A type or encoding is text from the channel file: escaped (_text), as
    # every text cell; cells reach rich and textual as Text, never markup.
    ("type", lambda r: r.type,
     lambda r: escape(r.error or (f"{r.type} ({r.encoding})" if r.encoding else r.type or "-"))),
    ("ring", lambda r: r.data_size, lambda r: f"{r.slots} x {human_bytes(r.data_size)}" if r.slots else "-"),
]


# --sort takes a column's first word ("rate" for "rate Hz").
SORT_NAMES = [title.split()[0] for title, _k, _t in COLUMNS]


def _sort_name(text: str) -> str:
    """A column title, whole or by its first word, as its --sort name."""
    return text.split()[0] if text else text


def cells(row: Row) -> List[str]:
    return [text(row) for _title, _key, text in COLUMNS]


def rich_cells(row: Row) -> list:  # -> List[rich.text.Text]
    """The cells as rich Text: shown as they are, never read as markup
    (a type like ``[red]x`` stays that text)."""
    from rich.text import Text

    return [Text(c) for c in cells(row)]


def arrange(rows: List[Row], sort: int = 0, reverse: bool = False, filt: str = "") -> List[Row]:
    """Filter (a glob if it has wildcards, else a substring) and sort."""
    if filt:
        if any(c in filt for c in "*?["):
            rows = [r for r in rows if fnmatch.fnmatchcase(r.name, filt)]
        else:
            rows = [r for r in rows if filt in r.name]
    key = COLUMNS[sort][1]
    return sorted(rows, key=lambda r: (key(r), r.name), reverse=reverse)


def render_table(rows: List[Row]):  # -> rich.table.Table
    """The rows as a rich table (``--once``)."""
    from rich.table import Table

    t = Table(box=None, pad_edge=False, header_style="bold")
    for title, _k, _t in COLUMNS:
        t.add_column(title, justify="left" if title in ("channel", "type", "ring", "procs") else "right")
    for r in rows:
        t.add_row(*rich_cells(r))
    return t


class _TopView:
    """What ``nerve top``'s textual application does: its widgets, the
    table kept in step with the monitor, the keys' actions. Mixed into the
    App subclass that make_app builds (textual is imported only there, and
    in these methods, when the application runs); the key bindings and CSS
    live on that subclass, where textual looks for them."""

    def __init__(self, monitor: Monitor, interval: float, sort: int, reverse: bool) -> None:
        super().__init__()
        self.monitor = monitor
        self.interval = interval
        self.sort = sort
        self.reverse = reverse
        self.filter = ""
        self.rows: List[Row] = []
        self._keys: List[str] = []  # the table's rows, in order

    def _table(self) -> DataTable:
        from textual.widgets import DataTable

        return self.query_one(DataTable)

    def _filter_box(self) -> Input:
        from textual.widgets import Input

        return self.query_one(Input)

    def compose(self):  # -> textual.app.ComposeResult
        from textual.widgets import DataTable, Footer, Input, Static

        yield Static(id="status")
        yield DataTable(id="table", cursor_type="row", zebra_stripes=True)
        yield Input(placeholder="filter: substring or glob, Enter to apply", id="filter")
        yield Footer()

    def on_mount(self) -> None:
        table = self._table()
        for title, _k, _t in COLUMNS:
            table.add_column(title, key=title)
        self.refresh_now()
        self.set_interval(self.interval, self.refresh_now)

    def refresh_now(self) -> None:
        """Sample the channels and update the table in place."""
        self.rows = self.monitor.sample()
        self.redraw()

    def _fill_table(self, shown: List[Row]) -> None:
        """The table shows `shown`: the same rows in the same order change
        only their cells (no flicker, the cursor stays where it is); other
        rows refill it, the cursor kept on the channel it was on."""
        table = self._table()
        keys = [r.name for r in shown]
        if keys == self._keys:
            for r in shown:
                for (title, _k, _t), text in zip(COLUMNS, rich_cells(r)):
                    table.update_cell(r.name, title, text, update_width=True)
            return
        cursor = self._keys[table.cursor_row] if 0 <= table.cursor_row < len(self._keys) else None
        table.clear()
        for r in shown:
            table.add_row(*rich_cells(r), key=r.name)
        self._keys = keys
        if cursor in keys:
            table.move_cursor(row=keys.index(cursor))

    def redraw(self) -> None:
        """The table and the status line for the rows, sort and filter."""
        from textual.widgets import Static

        shown = arrange(self.rows, self.sort, self.reverse, self.filter)
        self._fill_table(shown)
        arrow = "v" if self.reverse else "^"
        self.query_one("#status", Static).update(
            f"{len(shown)}/{len(self.rows)} channels  sort: {COLUMNS[self.sort][0]} {arrow}"
            + (f"  filter: {self.filter}" if self.filter else ""))

    def action_next_sort(self) -> None:
        self.sort = (self.sort + 1) % len(COLUMNS)
        self.redraw()

    def action_reverse(self) -> None:
        self.reverse = not self.reverse
        self.redraw()

    def action_filter(self) -> None:
        box = self._filter_box()
        box.add_class("shown")
        box.value = self.filter
        box.focus()

    def action_clear_filter(self) -> None:
        box = self._filter_box()
        box.remove_class("shown")
        self.filter = ""
        self._table().focus()
        self.redraw()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.filter = event.value.strip()
        self.redraw()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._filter_box().remove_class("shown")
        self._table().focus()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        titles = [c[0] for c in COLUMNS]
        i = titles.index(str(event.column_key.value))
        if i == self.sort:
            self.reverse = not self.reverse
        else:
            self.sort, self.reverse = i, False
        self.redraw()


def make_app(monitor: Monitor, interval: float = 0.5, sort: int = 0, reverse: bool = False):
    """The textual application (built lazily: textual is imported here)."""
    from textual.app import App
    from textual.binding import Binding

    class TopApp(_TopView, App):
        TITLE = "nerve top"
        CSS = """
        #filter { dock: bottom; display: none; }
        #filter.shown { display: block; }
        #status { dock: top; height: 1; }
        """
        BINDINGS = [
            Binding("q", "quit", "quit"),
            # The terminal is in raw mode, so Ctrl-C is a key, not SIGINT:
            # it quits, as it ends every other verb.
            Binding("ctrl+c", "quit", "quit", show=False, priority=True),
            Binding("s", "next_sort", "sort"),
            Binding("r", "reverse", "reverse"),
            Binding("slash", "filter", "filter"),
            Binding("escape", "clear_filter", "clear filter", show=False),
        ]

    return TopApp(monitor, interval, sort, reverse)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Live monitor of every channel.")
    options.add_patterns(p, "all")
    p.add_argument("-i", "--interval", type=float, default=0.5, help="refresh period in seconds (0.5)")
    p.add_argument("-w", "--window", type=float, default=2.0, help="rates over the last SEC seconds (2)")
    p.add_argument("--sort", type=_sort_name, choices=SORT_NAMES, default="channel",
                   help="the column to sort by (its first word: rate, not 'rate Hz')")
    p.add_argument("--reverse", action="store_true", help="sort in descending order")
    p.add_argument("--read-budget", type=int, default=10000, metavar="N",
                   help="messages read per channel and refresh at most (10000)")
    p.add_argument("--once", action="store_true",
                   help="print one table (rates over --interval) and exit, for scripts")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    if args.interval <= 0 or args.window <= 0:
        parser().error("--interval and --window must be positive")
    sort = SORT_NAMES.index(args.sort)
    monitor = Monitor(args.patterns, window_s=args.window, read_budget=args.read_budget)
    try:
        if args.once:
            import time

            from rich.console import Console

            monitor.sample()
            time.sleep(args.interval)
            rows = arrange(monitor.sample(), sort, args.reverse)
            out = Console()
            if not out.is_terminal:  # a pipe: full lines, no colour codes
                out = Console(width=1000, no_color=True, highlight=False)
            out.print(render_table(rows))
            return 0
        make_app(monitor, args.interval, sort, args.reverse).run()
    except KeyboardInterrupt:
        pass
    finally:
        monitor.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
