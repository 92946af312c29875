"""Regenerate the Arena app icons.

Usage (needs Pillow):  python3 icons/generate.py

Design: a dark rounded square with two crossed bars (amber and teal, the
two "contestants") and a small white spark where they meet.
"""

from pathlib import Path

from PIL import Image, ImageDraw

HERE = Path(__file__).resolve().parent
MASTER = 1024  # drawn at this size, then downsampled

BG_TOP = (38, 34, 62)
BG_BOTTOM = (20, 18, 34)
AMBER = (245, 158, 11)
TEAL = (20, 184, 166)
WHITE = (248, 250, 252)


def rounded_mask(size: int, radius: int, inset: int) -> Image.Image:
    mask = Image.new("L", (size, size), 0)
    ImageDraw.Draw(mask).rounded_rectangle(
        (inset, inset, size - 1 - inset, size - 1 - inset), radius=radius, fill=255
    )
    return mask


def bar(draw: ImageDraw.ImageDraw, a, b, width: int, color) -> None:
    draw.line((a, b), fill=color, width=width)
    r = width // 2
    for x, y in (a, b):
        draw.ellipse((x - r, y - r, x + r, y + r), fill=color)


def master() -> Image.Image:
    s = MASTER
    inset = s // 16
    # Vertical gradient background clipped to a rounded square.
    bg = Image.new("RGBA", (s, s))
    px = ImageDraw.Draw(bg)
    for y in range(s):
        t = y / (s - 1)
        c = tuple(round(BG_TOP[i] * (1 - t) + BG_BOTTOM[i] * t) for i in range(3))
        px.line(((0, y), (s, y)), fill=c + (255,))
    img = Image.new("RGBA", (s, s), (0, 0, 0, 0))
    img.paste(bg, (0, 0), rounded_mask(s, radius=s // 5, inset=inset))

    d = ImageDraw.Draw(img)
    lo, hi = int(s * 0.28), int(s * 0.72)
    w = int(s * 0.105)
    bar(d, (lo, hi), (hi, lo), w, TEAL)
    bar(d, (lo, lo), (hi, hi), w, AMBER)
    # Spark where the bars cross.
    c, r = s // 2, int(s * 0.075)
    d.ellipse((c - r, c - r, c + r, c + r), fill=WHITE)
    return img


def main() -> None:
    img = master()

    def sized(n: int) -> Image.Image:
        return img.resize((n, n), Image.LANCZOS)

    opts = {"optimize": True}
    sized(32).save(HERE / "32x32.png", **opts)
    sized(128).save(HERE / "128x128.png", **opts)
    sized(256).save(HERE / "128x128@2x.png", **opts)
    sized(512).save(HERE / "icon.png", **opts)
    sized(256).save(
        HERE / "icon.ico", sizes=[(16, 16), (24, 24), (32, 32), (48, 48), (64, 64), (256, 256)]
    )
    sized(512).save(HERE / "icon.icns")


if __name__ == "__main__":
    main()
