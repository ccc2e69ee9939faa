"""`flask backup list | verify [NAME] | dump [--output FILE] | restore-dump FILE [--into URL]` (CONTRACT.md,
Backups). `make backup` and `make restore` are scripts/stack.py's: they start or refuse the servers."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import click
from flask import Blueprint, current_app

from nexo.backup import base, dump, restore, verify
from nexo.settings import backup_settings

bp = Blueprint("backup", __name__, cli_group="backup")


def _size(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds")


@bp.cli.command("list")
def list_backups() -> None:
    """One line per backup: name, time, kind, size, the window it restores to, when it was last verified."""
    settings = backup_settings()
    backups = base.all_backups(settings)
    if not backups:
        click.echo(f"no backups in {settings.base_dir} (make backup takes one)")
        return
    span = restore.window(settings, backups)
    end = span.end if span else backups[-1].finished_at
    for b in backups:
        checked = "never verified"
        if b.verified:
            checked = f"verified {b.verified['at'][:19]}Z {'ok' if b.verified['ok'] else 'FAILED'}"
        click.echo(
            f"{b.name}  {_when(b.started_at)}  full  {_size(b.size_bytes)}  "
            f"window {_when(b.finished_at)} .. {_when(end)}  {checked}"
        )


@bp.cli.command("verify")
@click.argument("name", required=False)
def verify_backup(name: str | None) -> None:
    """Restore NAME (default: the newest) into a scratch cluster and check it; the last line is the verdict."""
    settings = backup_settings()
    backups = base.all_backups(settings)
    chosen = base.find(settings, name) if name else (backups[-1] if backups else None)
    if chosen is None:
        click.echo(f"verdict: FAILED: no backup {'called ' + name if name else 'at all'} in {settings.base_dir}")
        sys.exit(1)
    report = verify.verify(settings, chosen, current_app.config["NEXO_SETTINGS"].database_url)
    for ok, step, detail in report.lines:
        click.echo(f"{'ok  ' if ok else 'FAIL'}  {step}: {detail}")
    failed = [step for ok, step, _ in report.lines if not ok]
    verdict = (
        f"verdict: {chosen.name} restores and holds ({len(report.lines)} checks)"
        if report.ok
        else f"verdict: {chosen.name} FAILED: {', '.join(failed)}"
    )
    base.record_verdict(chosen, report.ok, verdict)
    click.echo(verdict)
    sys.exit(0 if report.ok else 1)


@bp.cli.command("dump")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Where to write it.")
def dump_database(output: Path | None) -> None:
    """A logical dump (pg_dump custom format) of Nexo's database; its path on the last line."""
    target = output or dump.default_path(backup_settings())
    path = dump.dump(current_app.config["NEXO_SETTINGS"].database_url, target)
    click.echo(str(path.resolve()))


@bp.cli.command("restore-dump")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--into", "url", default=None, help="The empty database to restore into (default DATABASE_URL).")
def restore_dump(file: Path, url: str | None) -> None:
    """Restore a dump into an empty database; refuses one that already holds Nexo's tables."""
    try:
        dump.restore_dump(file, url or current_app.config["NEXO_SETTINGS"].database_url)
    except dump.Refused as exc:
        click.echo(f"refused: {exc}")
        sys.exit(2)
    click.echo(f"restored {file}")
