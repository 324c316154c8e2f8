# The driver of a python3 kernel process of sandboxkit's fake code
# interpreter (process.go). It reads one JSON request per line on fd 3
# ({"code", "env"}), runs the code in a namespace that persists between
# requests, and answers JSON lines on fd 4: "display" for each display()
# output, then "done" with the value of the cell's last expression or the
# error it raised. Before each answer it flushes stdout and stderr and
# writes a marker line on both, so the Go side can put the answer after
# the output the code printed before it.
import ast
import base64
import inspect
import json
import linecache
import os
import sys
import traceback

_MARK = os.environ.pop("SANDBOXKIT_KERNEL_MARK").encode()
_requests = os.fdopen(3, "r", encoding="utf-8")
_replies = os.fdopen(4, "w", encoding="utf-8")
os.set_inheritable(3, False)
os.set_inheritable(4, False)
# One stream message per line, as Jupyter sends a print's line at once.
sys.stdout.reconfigure(line_buffering=True)
sys.stderr.reconfigure(line_buffering=True)
_seq = 0
_loop = None  # made for the first top-level await (asyncio is slow to import)

# IPython's rich-display methods and the Result fields they fill.
_REPRS = (
    ("_repr_html_", "html"), ("_repr_markdown_", "markdown"), ("_repr_svg_", "svg"),
    ("_repr_png_", "png"), ("_repr_jpeg_", "jpeg"), ("_repr_json_", "json"),
)


def _sync():
    global _seq
    _seq += 1
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass
    line = _MARK + str(_seq).encode() + b"\n"
    for fd in (1, 2):
        try:
            os.write(fd, line)
        except OSError:
            pass
    return _seq


def _send(msg):
    msg["seq"] = _sync()
    _replies.write(json.dumps(msg) + "\n")
    _replies.flush()


def _bundle(value):
    out = {"text": repr(value)}
    for method, key in _REPRS:
        fn = getattr(value, method, None)
        if not callable(fn) or inspect.isclass(value):
            continue
        try:
            data = fn()
        except Exception:
            continue
        if data is None:
            continue
        if isinstance(data, tuple):
            data = data[0]
        if isinstance(data, bytes):
            data = base64.b64encode(data).decode()
        out[key] = data
    return out


def display(*objs, **_):
    """IPython.display.display: each object becomes a result of the cell."""
    for obj in objs:
        _send({"type": "display", "result": _bundle(obj)})


def _show_figures():
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    import io
    for num in plt.get_fignums():
        fig = plt.figure(num)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", bbox_inches="tight")
        _send({"type": "display", "result": {"text": repr(fig), "png": base64.b64encode(buf.getvalue()).decode()}})
    plt.close("all")


class _Display:
    """A rich object of the IPython.display stand-in."""

    def __init__(self, data=None, url=None, filename=None, format=None, **_):
        if filename is not None:
            with open(filename, "rb") as f:
                data = f.read()
        self.data = data

    def __repr__(self):
        return "<IPython.core.display.%s object>" % type(self).__name__


def _display_class(name, method):
    return type(name, (_Display,), {method: lambda self: self.data})


def _ipython_stand_in():
    """Without IPython installed (E2B's template has it), a module
    IPython.display with display() and the usual rich objects."""
    try:
        import IPython.display  # noqa: F401
        return
    except ImportError:
        pass
    import types
    pkg, mod = types.ModuleType("IPython"), types.ModuleType("IPython.display")
    mod.display = display
    for name, method in (("Image", "_repr_png_"), ("HTML", "_repr_html_"), ("Markdown", "_repr_markdown_"),
                         ("SVG", "_repr_svg_"), ("JSON", "_repr_json_")):
        setattr(mod, name, _display_class(name, method))
    pkg.display = mod
    sys.modules["IPython"], sys.modules["IPython.display"] = pkg, mod


_ipython_stand_in()
_ns = {"__name__": "__main__", "__builtins__": __builtins__, "display": display}


def _error(exc, skip):
    tb = exc.__traceback__
    for _ in range(skip):
        if tb is not None:
            tb = tb.tb_next
    lines = traceback.format_exception(type(exc), exc, tb)
    return {"name": type(exc).__name__, "value": str(exc), "traceback": "".join(lines).rstrip("\n")}


def _await(coro):
    global _loop
    if _loop is None:
        import asyncio
        _loop = asyncio.new_event_loop()
    return _loop.run_until_complete(coro)


def _run(code, count):
    name = "Cell In[%d]" % count
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    try:
        tree = ast.parse(code, name, "exec")
    except SyntaxError as e:
        return None, {"name": type(e).__name__, "value": str(e),
                      "traceback": "".join(traceback.format_exception_only(type(e), e)).rstrip("\n")}
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    try:
        r = eval(compile(tree, name, "exec", flags=flags), _ns)
        if inspect.iscoroutine(r):
            r = _await(r)
        value = None
        if last is not None:
            value = eval(compile(last, name, "eval", flags=flags), _ns)
            if inspect.iscoroutine(value):
                value = _await(value)
    except BaseException as e:  # SystemExit and KeyboardInterrupt end the cell too
        return None, _error(e, 1)
    _show_figures()
    if value is None:
        return None, None
    _ns["_"] = value
    return _bundle(value), None


def _main():
    count = 0
    while True:
        try:
            line = _requests.readline()
        except KeyboardInterrupt:
            continue
        if not line:
            return
        req = json.loads(line)
        for k, v in (req.get("env") or {}).items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        count += 1
        try:
            result, error = _run(req["code"], count)
        except KeyboardInterrupt as e:
            result, error = None, _error(e, 0)
        _send({"type": "done", "result": result, "error": error})


_main()
