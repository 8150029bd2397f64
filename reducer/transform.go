package reducer

import (
	"encoding/json"

	"github.com/canvasd/canvasd/canvas"
)

// decideMove: move {ids, dx, dy} (relative) or move {id, x, y} (absolute, the
// node's top-left corner). Descendants move along; a node listed together
// with one of its ancestors moves once.
func decideMove(t *tx, args json.RawMessage) error {
	var a canvas.MoveArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	if a.ID != "" {
		if a.IDs != nil {
			return canvas.Unprocessable("args.ids", "give either ids with dx/dy (relative move) or id with x/y (absolute move), not both")
		}
		if a.DX != nil || a.DY != nil {
			return canvas.Unprocessable("args.dx", "an absolute move {id, x, y} takes x and y; use {ids, dx, dy} for a relative move")
		}
		if a.X == nil && a.Y == nil {
			return canvas.Unprocessable("args.x", "is required with id (the new page x of the node's top-left corner)")
		}
		n, err := t.needNode("args.id", a.ID)
		if err != nil {
			return err
		}
		dx, dy := 0.0, 0.0
		if a.X != nil {
			dx = *a.X - n.X
		}
		if a.Y != nil {
			dy = *a.Y - n.Y
		}
		t.translate([]string{a.ID}, dx, dy)
		return nil
	}
	if a.X != nil || a.Y != nil {
		return canvas.Unprocessable("args.x", "a relative move {ids, dx, dy} takes dx and dy; use {id, x, y} for an absolute move")
	}
	if err := t.selection(a.IDs); err != nil {
		return err
	}
	if a.DX == nil && a.DY == nil {
		return canvas.Unprocessable("args.dx", "is required: give dx and/or dy (page units)")
	}
	dx, dy := 0.0, 0.0
	if a.DX != nil {
		dx = *a.DX
	}
	if a.DY != nil {
		dy = *a.DY
	}
	t.translate(t.roots(a.IDs), dx, dy)
	return nil
}

func (t *tx) translate(roots []string, dx, dy float64) {
	if dx == 0 && dy == 0 {
		return
	}
	t.transformTrees(roots, func(m *canvas.Node) { m.X, m.Y = m.X+dx, m.Y+dy })
}

// decideResize: resize {ids, scale_x, scale_y, origin_x?, origin_y?} scales
// the nodes and their descendants about the origin (default: the top-left
// corner of their common bounds); resize {id, w, h} sets one node's size
// (a group scales its contents to fit; a frame's children keep their size).
// A rotated node keeps its rotation while its corner and size scale, which
// is exact for uniform scales and an approximation otherwise (a rotated
// rectangle stretched along the page axes is no longer a rectangle).
func decideResize(t *tx, args json.RawMessage) error {
	var a canvas.ResizeArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	if a.ID != "" {
		if a.IDs != nil {
			return canvas.Unprocessable("args.ids", "give either ids with scale_x/scale_y or id with w/h, not both")
		}
		if a.ScaleX != nil || a.ScaleY != nil || a.OriginX != nil || a.OriginY != nil {
			return canvas.Unprocessable("args.scale_x", "resize {id, w, h} sets a size; use {ids, scale_x, scale_y} to scale")
		}
		if a.W == nil && a.H == nil {
			return canvas.Unprocessable("args.w", "is required with id: the new width and/or height")
		}
		if _, err := t.needNode("args.id", a.ID); err != nil {
			return err
		}
		return t.setGeometry(a.ID, geomUpdate{w: a.W, h: a.H, prefix: "args."})
	}
	if a.W != nil || a.H != nil {
		return canvas.Unprocessable("args.w", "resize {ids, scale_x, scale_y} scales; use {id, w, h} to set a size")
	}
	if err := t.selection(a.IDs); err != nil {
		return err
	}
	if a.ScaleX == nil && a.ScaleY == nil {
		return canvas.Unprocessable("args.scale_x", "is required: give scale_x and/or scale_y (factors > 0)")
	}
	sx, sy := 1.0, 1.0
	if a.ScaleX != nil {
		sx = *a.ScaleX
	}
	if a.ScaleY != nil {
		sy = *a.ScaleY
	}
	if !(sx > 0) {
		return canvas.Unprocessable("args.scale_x", "must be > 0, got %v", sx)
	}
	if !(sy > 0) {
		return canvas.Unprocessable("args.scale_y", "must be > 0, got %v", sy)
	}
	roots := t.roots(a.IDs)
	b := t.unionBounds(roots)
	ox, oy := b.minX, b.minY
	if a.OriginX != nil {
		ox = *a.OriginX
	}
	if a.OriginY != nil {
		oy = *a.OriginY
	}
	if sx == 1 && sy == 1 {
		return nil
	}
	t.transformTrees(roots, func(m *canvas.Node) {
		m.X, m.Y = ox+(m.X-ox)*sx, oy+(m.Y-oy)*sy
		m.W, m.H = m.W*sx, m.H*sy
	})
	return nil
}

// decideRotate: rotate {ids, degrees, origin_x?, origin_y?} turns the nodes
// and their descendants about the origin (default: the centre of their
// common bounds). Positive degrees turn clockwise on screen (y grows down),
// as TLDraw's rotation does. Groups keep rotation 0 and follow their contents.
func decideRotate(t *tx, args json.RawMessage) error {
	var a canvas.RotateArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	if err := t.selection(a.IDs); err != nil {
		return err
	}
	if a.Degrees == nil {
		return canvas.Unprocessable("args.degrees", "is required: the angle to turn by, in degrees")
	}
	roots := t.roots(a.IDs)
	b := t.unionBounds(roots)
	cx, cy := b.midX(), b.midY()
	if a.OriginX != nil {
		cx = *a.OriginX
	}
	if a.OriginY != nil {
		cy = *a.OriginY
	}
	delta := degreesToRadians(*a.Degrees)
	if delta == 0 {
		return nil
	}
	s, c := sincos(delta)
	t.transformTrees(roots, func(m *canvas.Node) {
		m.X, m.Y = rotatePoint(m.X, m.Y, cx, cy, s, c)
		if m.Type != "group" {
			m.Rotation = normRotation(m.Rotation + delta)
		}
	})
	return nil
}
