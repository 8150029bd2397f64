#!/usr/bin/env python3
"""Builds the TrueType fonts the renderer embeds (see README.md), with fontTools.

Usage: build.py EXCALIDRAW_FONTS NUNITO_WOFF_DIR OUT_DIR
  EXCALIDRAW_FONTS  web/ui/node_modules/@excalidraw/excalidraw/dist/prod/fonts
  NUNITO_WOFF_DIR   the files/ folder of the @fontsource/nunito npm package
Each family's subsets (split by Unicode range for the browser) are converted
from WOFF2/WOFF to TrueType and merged into one file; glyphs are not changed.
Tables the renderer does not read (GSUB, GDEF, ...) are left out.
Liberation Sans is Debian's fonts-liberation2 file, copied unchanged.
"""
import glob
import os
import sys

from fontTools.merge import Merger
from fontTools.ttLib import TTFont

KEEP = {"cmap", "head", "hhea", "hmtx", "maxp", "name", "OS/2", "post", "glyf", "loca", "kern", "GPOS", "GlyphOrder"}


def merged(files, tmp):
    ttfs = []
    for i, f in enumerate(files):
        t = TTFont(f)
        t.flavor = None
        p = os.path.join(tmp, f"part{i}.ttf")
        t.save(p)
        ttfs.append(p)
    font = TTFont(ttfs[0]) if len(ttfs) == 1 else Merger().merge(ttfs)
    for tag in list(font.keys()):
        if tag not in KEEP:
            del font[tag]
    return font


def main(excalidraw, nunito, out):
    tmp = os.path.join(out, ".tmp")
    os.makedirs(tmp, exist_ok=True)
    families = {
        "Excalifont-Regular.ttf": glob.glob(f"{excalidraw}/Excalifont/*.woff2"),
        "Virgil-Regular.ttf": glob.glob(f"{excalidraw}/Virgil/*.woff2"),
        "LilitaOne-Regular.ttf": glob.glob(f"{excalidraw}/Lilita/*.woff2"),
        "CascadiaCode-Regular.ttf": glob.glob(f"{excalidraw}/Cascadia/*.woff2"),
        "ComicShanns-Regular.ttf": glob.glob(f"{excalidraw}/ComicShanns/*.woff2"),
        # Excalidraw's own Nunito WOFF2 files use a glyf transform older
        # fontTools cannot read; fontsource ships the same Nunito (3.6) as WOFF.
        "Nunito-Regular.ttf": [f"{nunito}/nunito-{r}-400-normal.woff" for r in
                               ("latin", "latin-ext", "cyrillic", "cyrillic-ext", "vietnamese")],
    }
    for name, files in families.items():
        merged(sorted(files), tmp).save(os.path.join(out, name))
        print(name, os.path.getsize(os.path.join(out, name)))
    for f in glob.glob(os.path.join(tmp, "*")):
        os.remove(f)
    os.rmdir(tmp)


if __name__ == "__main__":
    main(*sys.argv[1:4])
