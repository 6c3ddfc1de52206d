"""The Jinja sandbox templates, phrases and constraints run in: Jinja's immutable sandbox (no
attribute of Python's internals, no list or dict changed in place), with every operation that
can grow a string or a list bounded, so that no template line can fill the memory.

Two bounds, both refusals (a SecurityError, which the renderer reports as one line naming the
template line and the words):

- before the work: an operation whose result would be over MAX_STRING characters (or MAX_ITEMS
  items) is refused from its arguments' sizes, without building it: `*` and `+`, `%` and
  `format` widths, `ljust`/`rjust`/`center`/`zfill`/`expandtabs`, `join`, `replace`,
  `translate`, `~`, the `center`, `indent`, `wordwrap`, `join`, `replace`, `format`, `batch`,
  `slice` and `sum` filters, `lipsum`;
- over one render: every string and list a call, filter, operator, slice or output builds is
  charged to the render, and a render that builds over MAX_BUILT characters in all is stopped
  (a loop that keeps a million-character string a thousand times over).

A sentence is 2,000 characters by default, so these leave templates all the room they need;
at four bytes a character they hold one render to a few hundred MB at the very most.
"""

from __future__ import annotations

import functools
import re
import string
import threading

from jinja2 import Template
from jinja2.compiler import CodeGenerator
from jinja2.runtime import Namespace
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

MAX_REPEAT, MAX_EXPONENT = 10_000, 64   # `*` of a string or list, `**`: a typo must not fill the memory
MAX_STRING = 1_000_000                  # characters of any one string a template builds
MAX_ITEMS = 100_000                     # items of any one list a template builds
MAX_BUILT = 20_000_000                  # characters built in all by one render
MAX_BITS = 1 << 16                      # bits of a number a template computes (about 20,000 digits)

_PRINTF = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?")
_NUMBER = re.compile(r"\d+")


def size(value, budget: int = MAX_STRING) -> int:
    """About len(str(value)) (at least it), counted without building it; stops once over
    `budget` (a list holding one list of 100,000 items 10,000 times is not walked through)."""
    total, stack = 0, [value]
    while stack and total <= budget:
        v = stack.pop()
        if isinstance(v, str):
            total += len(v)
        elif isinstance(v, bool) or v is None:
            total += 5
        elif isinstance(v, int):
            total += v.bit_length() // 3 + 2
        elif isinstance(v, (list, tuple, set, frozenset)):
            total += 2 + 2 * len(v)
            stack.extend(v)
        elif isinstance(v, dict):
            total += 2 + 4 * len(v)
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, Namespace):
            total += 16
            stack.append(v._Namespace__attrs)  # noqa: SLF001 -- its str() prints them
        else:
            total += 32
    return total


def _refuse(what: str) -> None:
    raise SecurityError(what)


def _cap(n: int, what: str) -> None:
    if n > MAX_STRING:
        _refuse(f"{what} would be {n:,} characters, over {MAX_STRING:,}")


def _cap_items(n: int, what: str) -> None:
    if n > MAX_ITEMS:
        _refuse(f"{what} would hold {n:,} items, over {MAX_ITEMS:,}")


def _width(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    _cap(value, what)
    return value


def _printf(fmt: str, args, what: str) -> None:
    """`fmt % args`: no width or precision over the limit, the result estimated from the arguments."""
    ints = [a for a in (args if isinstance(args, tuple) else (args,)) if isinstance(a, int) and not isinstance(a, bool)]
    fields = 0
    for m in _PRINTF.finditer(fmt):
        fields += 1
        for part in m.groups():
            if part == "*":
                for n in ints:
                    _width(n, what)
            elif part:
                _width(int(part), what)
    _cap(len(fmt) + fields * size(args) + sum(int(p) for m in _PRINTF.finditer(fmt) for p in m.groups()
                                              if p and p != "*"), what)


def _format(fmt: str, args, kwargs, what: str) -> None:
    """`fmt.format(...)`: no width over the limit (nested widths: no argument over it), the
    result estimated from the fields and the largest argument."""
    try:
        parsed = list(string.Formatter().parse(fmt))
    except ValueError:
        return  # Python refuses it itself
    largest = max((size(a) for a in (*args, *kwargs.values())), default=0)
    widths = 0
    for _, field, spec, _ in parsed:
        if spec and "{" in spec:
            for a in (*args, *kwargs.values()):
                _width(a, what)
        for n in _NUMBER.findall(spec or ""):
            widths += _width(int(n), what)
    _cap(len(fmt) + sum(f is not None for _, f, _, _ in parsed) * largest + widths, what)


def _join(items, sep: str, what: str) -> None:
    items = list(items) if not isinstance(items, (list, tuple, str)) else items
    if isinstance(items, str):
        _cap(len(items) * (1 + len(sep)), what)
        return
    _cap_items(len(items), what)
    _cap(size(list(items)) + len(sep) * max(len(items) - 1, 0), what)


# --------------------------------------------------------------------- str methods, before

def _check_method(name: str, owner: str, args, kwargs) -> None:
    what = f"str.{name}"
    if name in ("ljust", "rjust", "center", "zfill"):
        width = args[0] if args else kwargs.get("width", 0)
        _cap(max(_width(width, what), len(owner)) * (len(args[1]) if len(args) > 1 and isinstance(args[1], str) else 1),
             what)
    elif name == "expandtabs":
        tab = args[0] if args else kwargs.get("tabsize", 8)
        _cap(len(owner) + owner.count("\t") * _width(tab, what), what)
    elif name == "join" and args:
        _join(args[0], owner, what)
    elif name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        times = owner.count(args[0]) if args[0] else len(owner) + 1
        _cap(len(owner) + times * max(len(args[1]) - len(args[0]), 0), what)
    elif name == "translate" and args and isinstance(args[0], dict):
        longest = max((size(v) for v in args[0].values()), default=1)
        _cap(len(owner) * max(longest, 1), what)
    elif name in ("format", "format_map"):
        _format(owner, args if name == "format" else (), kwargs if name == "format" else (args[0] if args else {}),
                what)


# --------------------------------------------------------------------- filters, before

def _filter_checks(name: str, args, kwargs) -> None:
    what = f"the filter {name}"
    value = args[0] if args else ""
    text = value if isinstance(value, str) else ""
    if name == "center":
        _cap(_width(args[1] if len(args) > 1 else kwargs.get("width", 80), what) + len(text), what)
    elif name == "indent":
        width = args[1] if len(args) > 1 else kwargs.get("width", 4)
        unit = len(width) if isinstance(width, str) else _width(width, what)
        _cap(size(value) + (str(value).count("\n") + 1 if size(value) <= MAX_STRING else MAX_STRING) * unit, what)
    elif name == "wordwrap":
        wrap = (args[3] if len(args) > 3 else None) or kwargs.get("wrapstring") or "\n"
        _cap(size(value) * (1 + len(str(wrap))), what)
    elif name == "join":
        sep = args[1] if len(args) > 1 else kwargs.get("d", "")
        if not isinstance(value, (list, tuple, str)):
            return  # a generator (map, select): its items are charged as they are made
        _join(value, str(sep) if isinstance(sep, str) else "", what)
    elif name == "replace" and len(args) >= 3 and isinstance(args[1], str) and isinstance(args[2], str):
        times = text.count(args[1]) if args[1] else len(text) + 1
        _cap(len(text) + times * max(len(args[2]) - len(args[1]), 0), what)
    elif name == "format" and isinstance(value, str):
        _printf(value, tuple(args[1:]) or tuple(kwargs.values()), what)
    elif name in ("batch", "slice"):
        n = args[1] if len(args) > 1 else 0
        _cap_items(n if isinstance(n, int) else 0, what)
    elif name == "sum" and isinstance(kwargs.get("start", args[2] if len(args) > 2 else 0), (list, tuple)) \
            and isinstance(value, (list, tuple)):
        _cap_items(sum(len(v) for v in value if isinstance(v, (list, tuple))), what)


def _bounded_filter(name: str, fn):
    if getattr(fn, "_bounded", False):
        return fn
    special = hasattr(fn, "jinja_pass_arg")

    @functools.wraps(fn)
    def bounded(*args, **kwargs):
        plain = args[1:] if special else args  # the context or environment some filters take first
        _filter_checks(name, plain, kwargs)
        return _charge(fn(*args, **kwargs), f"the filter {name}")
    bounded._bounded = True
    return bounded


# --------------------------------------------------------------------- what one render builds

_spent = threading.local()


def begin() -> None:
    """A render starts: nothing built yet."""
    _spent.n = 0


def _charge(result, what: str):
    if isinstance(result, str):
        n = len(result)
    elif isinstance(result, (list, tuple, dict)):
        _cap_items(len(result), what)
        n = len(result)
    else:
        return result
    _spent.n = getattr(_spent, "n", 0) + n
    if _spent.n > MAX_BUILT:
        _refuse(f"the template builds over {MAX_BUILT:,} characters in one render (at {what})")
    return result


class _Generator(CodeGenerator):
    """`a ~ b` through the environment, bounded like the rest (Jinja joins it directly)."""

    def visit_Concat(self, node, frame):
        self.write("environment.tilde((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class _Template(Template):
    """A template whose every render (and every compiled expression's call) starts its own
    budget of characters built, whoever renders it."""

    def new_context(self, *args, **kwargs):
        begin()
        return super().new_context(*args, **kwargs)


class Sandbox(ImmutableSandboxedEnvironment):
    code_generator_class = _Generator
    template_class = _Template
    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, *args, **kwargs):
        super().__init__(*args, finalize=self._output, **kwargs)
        self.globals.pop("lipsum", None)   # lipsum(n=10**9) is a gigabyte of Latin
        self.filters = _BoundedFilters(self.filters)

    # -- operators
    def call_binop(self, context, operator, left, right):
        what = f"`{operator}`"
        if operator == "**" and isinstance(right, (int, float)):
            if abs(right) > MAX_EXPONENT:
                raise SecurityError(f"exponent {right} is over {MAX_EXPONENT}")
            if isinstance(left, int) and isinstance(right, int) and left.bit_length() * abs(right) > MAX_BITS:
                raise SecurityError(f"{what}: a number of over {MAX_BITS:,} bits")
        if operator == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and len(seq) * n > MAX_REPEAT:
                    raise SecurityError(f"repetition to {len(seq) * n} items is over {MAX_REPEAT}")
            if isinstance(left, int) and isinstance(right, int) and left.bit_length() + right.bit_length() > MAX_BITS:
                raise SecurityError(f"{what}: a number of over {MAX_BITS:,} bits")
        if operator == "+":
            if isinstance(left, str) and isinstance(right, str):
                _cap(len(left) + len(right), what)
            elif isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
                _cap_items(len(left) + len(right), what)
        if operator == "%" and isinstance(left, str):
            _printf(left, right, what)
        return _charge(super().call_binop(context, operator, left, right), what)

    def tilde(self, parts):
        _cap(sum(size(p) for p in parts), "`~`")
        return _charge("".join(map(str, parts)), "`~`")

    # -- calls, slices, output, joined blocks
    def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 -- Jinja's own signature
        owner = getattr(__obj, "__self__", None)
        wrapped = getattr(__obj, "__wrapped__", None)  # str.format, as the sandbox wraps it
        if wrapped is not None and isinstance(getattr(wrapped, "__self__", None), str):
            owner, name = wrapped.__self__, wrapped.__name__
        else:
            name = getattr(__obj, "__name__", "")
        if isinstance(owner, str):
            _check_method(name, owner, args, kwargs)
        return _charge(super().call(__context, __obj, *args, **kwargs), f"{name or 'a call'}()")

    def getitem(self, obj, argument):
        return _charge(super().getitem(obj, argument), "a slice") if isinstance(argument, slice) \
            else super().getitem(obj, argument)

    @staticmethod
    def _output(value):
        if not isinstance(value, str):
            _cap(size(value), "the output")
        return value

    @staticmethod
    def concat(pieces):
        pieces = list(pieces)
        _cap(sum(len(p) for p in pieces), "a block's output")
        return _charge("".join(pieces), "a block's output")


class _BoundedFilters(dict):
    """The environment's filters, each checked before and charged after (a filter added later,
    as stimuli.grammar's are, is wrapped as it is added)."""

    def __init__(self, filters):
        super().__init__({k: _bounded_filter(k, v) for k, v in filters.items()})

    def __setitem__(self, key, value):
        super().__setitem__(key, _bounded_filter(key, value))

    def update(self, *args, **kwargs):
        for k, v in dict(*args, **kwargs).items():
            self[k] = v
