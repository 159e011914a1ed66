"""``clirmatrix sample``: small, realistic sample dumps to build from."""

from __future__ import annotations

import os

import click

from clirmatrix.cli.common import console
from clirmatrix.pipeline.config import DEFAULT_SEED
from clirmatrix.pipeline.errors import InvalidInputError
from clirmatrix.pipeline.tools.sample import DEFAULT_INPUTS as DEFAULT_SAMPLE_INPUTS
from clirmatrix.pipeline.tools.sample import INPUTS as SAMPLE_INPUTS

DEFAULT_SAMPLE_LANGS = ("en", "de", "es", "fr", "ru", "ar", "zh", "ja")  # the MULTI-8 languages, 5 scripts


class SampleFolderError(InvalidInputError):
    """``clirmatrix sample`` would write into a folder that holds other files."""


@click.command()
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("--docs-per-lang", type=click.IntRange(min=50), default=2000, show_default=True, help="About this many articles per language.")
@click.option("--langs", default=",".join(DEFAULT_SAMPLE_LANGS), show_default=True, help="Languages to generate.")
@click.option("--seed", type=int, default=DEFAULT_SEED, show_default=True)
@click.option("--clean/--broken", default=False, show_default=True, help="--broken (default) puts one bad record in each dump, as real dumps have.")
@click.option("--force", is_flag=True, help="Write into OUT_DIR even when it is not empty (files of the same names are replaced, others stay).")
@click.option(
    "--inputs",
    type=click.Choice(SAMPLE_INPUTS),
    default=DEFAULT_SAMPLE_INPUTS,
    show_default=True,
    help="fresh: what Wikimedia publishes today (Enterprise HTML, multistream XML, wb_items_per_site, page_props); "
    "classic: the 2020 paper's (CirrusSearch dumps, stopped in 2025, and the Wikidata JSON dump), for past dates.",
)
def sample(out_dir: str, docs_per_lang: int, langs: str, seed: int, clean: bool, force: bool, inputs: str) -> None:
    """Write small, realistic sample dumps into OUT_DIR, in the formats of today (or of 2020: --inputs classic).

    OUT_DIR must be new, empty or hold this very sample (a rerun writes nothing),
    or give --force. The last line is the build
    command for these dumps: a default build drops every language of fewer than
    --min-docs 10000 documents, and fails a language whose bad records are over
    --max-bad-fraction 0.001; a --broken dump's one bad record is over that in a
    language of fewer than 1,000 articles (--docs-per-lang below about 1200), so
    such a sample builds with --clean or with the --max-bad-fraction printed.
    """
    from clirmatrix.pipeline.io.localio import check_folder_path
    from clirmatrix.pipeline.method.languages import check_langs
    from clirmatrix.pipeline.tools.sample import SCRIPTS, build_flags, make_world, sample_settings, write_sample_dumps, written_settings

    chosen = tuple(check_langs(langs, SCRIPTS, "--langs", "sample language"))
    if not chosen:
        raise click.BadParameter("name at least one language", param_hint="--langs")
    check_folder_path(out_dir, "OUT_DIR")
    if os.path.isdir(out_dir) and any(os.scandir(out_dir)) and not force:
        if written_settings(out_dir) != sample_settings(docs_per_lang, chosen, seed, not clean, inputs):
            raise SampleFolderError(f"OUT_DIR {out_dir} is not empty; pass --force to write the sample into it anyway, or give a new folder")
        world = make_world(docs_per_lang, chosen, seed)  # a rerun of the same command: those bytes are there already
        console.print(f"{out_dir} already holds this sample (same settings); nothing written (--force writes it again)", highlight=False)
    else:
        with console.status(f"writing sample dumps for {len(chosen)} languages"):
            world = write_sample_dumps(out_dir, docs_per_lang, chosen, seed, broken=not clean, inputs=inputs)
        articles = sum(len(entity.langs) for entity in world.entities)
        console.print(f"[green]wrote[/] {out_dir}: {len(world.entities):,} entities, {articles:,} articles in {', '.join(chosen)}")
    console.print(f"build them with: clirmatrix build --dumps {out_dir} --out OUT {' '.join(build_flags(world, broken=not clean))}", highlight=False, soft_wrap=True)
