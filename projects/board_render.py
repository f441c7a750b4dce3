"""The HTML of the board's cards, built in Python.

A board of 500 projects has ~500 cards; through the template engine they cost more than every
other part of the page together (a node costs microseconds, a card has dozens), which broke the
150 ms budget on a busy machine. The markup lives here, once; the page, its columns and filters
stay in templates/projects/board.html. Every value in a Card is already escaped (selectors.board).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString

from projects.selectors.board import Card, Column

CARD = ('<li class="{css}" id="card-{key}"{drag}>'
        '<h3 class="card-name">{title}</h3>'
        '<p class="card-requester muted">Requested by {requester}</p>'
        '<dl class="card-stats"><div><dt>Attempt</dt><dd>{iteration}</dd></div>'
        '<div><dt>Pass rate</dt><dd>{pass_rate}</dd></div>'
        '<div><dt>Tokens</dt><dd>{tokens}</dd></div>'
        '<div><dt>Cost</dt><dd>{cost}</dd></div>'
        '<div><dt>In column</dt><dd>{age}</dd></div></dl>{badge}{controls}</li>\n')
MOVE = ('<form method="post" action="{url}" hx-post="{url}" hx-target="#board" '
        'hx-swap="outerHTML" hx-include="#board-filters">'
        '<input type="hidden" name="csrfmiddlewaretoken" value="{csrf}">'
        '<input type="hidden" name="direction" value="{direction}">'
        '<button type="submit" class="small-button" id="move-{direction}-{key}"{disabled}>'
        'Move {direction}<span class="visually-hidden"> {name}</span></button></form>')


@dataclass(frozen=True)
class CardContext:
    move_url_prefix: str  # "/t/acme/board/queue/"; the card's id and "/move/" follow
    csrf_token: str


def _badge(card: Card) -> str:
    if not card.needs_human:
        return ""
    if card.approval_url:
        mine = ": your review" if card.needs_my_review else ""
        return (f'<p class="card-badges"><a class="badge warn" href="{card.approval_url}">'
                f"Needs a human{mine}</a></p>")
    return '<p class="card-badges"><span class="badge warn">Needs a human</span></p>'


def _controls(card: Card, ctx: CardContext, first: bool, last: bool) -> str:
    url = f"{ctx.move_url_prefix}{card.key}/move/"
    forms = [MOVE.format(url=url, csrf=escape(ctx.csrf_token), direction=direction,
                         key=card.key, name=card.name,
                         disabled=" disabled" if edge else "")
             for direction, edge in (("up", first), ("down", last))]
    return f'<div class="queue-controls">{"".join(forms)}</div>'


def card_html(card: Card, ctx: CardContext, *, reorderable: bool = False, first: bool = False,
              last: bool = False) -> str:
    title = f'<a href="{card.link}">{card.name}</a>' if card.link else card.name
    return CARD.format(
        css=card.css, key=card.key, title=title, requester=card.requester,
        drag=f' draggable="true" data-project="{card.key}"' if reorderable else "",
        iteration=card.iteration_text, pass_rate=card.pass_text, tokens=card.tokens_text,
        cost=card.cost_text, age=card.age_text, badge=_badge(card),
        controls=_controls(card, ctx, first, last) if reorderable else "")


def column_cards_html(column: Column, ctx: CardContext) -> SafeString:
    """Every shown card of the column, in order (Move up/down disabled at the ends)."""
    shown = column.shown
    return SafeString("".join(
        card_html(card, ctx, reorderable=column.reorderable, first=i == 0,
                  last=i == len(shown) - 1)
        for i, card in enumerate(shown)))
