"""``clirmatrix irds``: the ir_datasets ids a build or download registers."""

from __future__ import annotations

import click

from clirmatrix.cli.common import console


@click.command("irds")
@click.argument("root", type=click.Path(exists=True, file_okay=False))
@click.option("--prefix", default="clirmatrix-local", show_default=True, help="Namespace of the ids (not clirmatrix, which is the official release's).")
def irds_command(root: str, prefix: str) -> None:
    """List the ir_datasets ids a build or download registers, and how to load them."""
    try:
        from clirmatrix.pipeline.tools import irds
    except ImportError as error:
        raise click.ClickException(str(error)) from None
    ids = irds.registered_ids(root, prefix)
    for dataset_id in ids:
        click.echo(dataset_id)
    lacking = irds.without_docs(ids, prefix)
    for missing in sorted(set(lacking.values())):
        lang = missing.split("/")[-1].split(".")[0]
        count = sum(1 for path in lacking.values() if path == missing)
        note = f"{count:,} ids judge documents in {lang} but {missing} is not there: queries and qrels only (clirmatrix download docs --tgt {lang})"
        console.print(f"[yellow]note[/] {note}", highlight=False, soft_wrap=True)
    example = next((i for i in ids if "/bi139-base/" in i), ids[0] if ids else f"{prefix}/de")
    console.print(
        f"{len(ids):,} ids. In Python:\n    import ir_datasets\n    from clirmatrix import irds\n"
        f"    irds.register({root!r}, prefix={prefix!r})\n    ir_datasets.load({example!r})",
        highlight=False,
    )
