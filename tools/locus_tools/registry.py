"""The figures tools/reproduce knows, in the order `all` runs them."""

from . import seed000, seed002, seed003

FIGURES = {f.name: f for f in seed000.FIGURES + seed002.FIGURES + seed003.FIGURES}


def names():
    return list(FIGURES)


def get(name):
    """The figure called name; KeyError names every known figure."""
    try:
        return FIGURES[name]
    except KeyError:
        raise KeyError(f"unknown figure '{name}'; known figures: {', '.join(FIGURES)}, all") from None


def resolve(requested):
    """Names as given on a command line ('all' expands) -> figures, each once, in order."""
    wanted = []
    for name in requested:
        for n in (names() if name == "all" else [name]):
            fig = get(n)
            if fig not in wanted:
                wanted.append(fig)
    return wanted
