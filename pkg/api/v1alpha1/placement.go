package v1alpha1

// DefaultWeight is a context's placement weight when it sets none.
const DefaultWeight int32 = 1

// PlacementWeight returns the context's weight under spec.placement.
func (c *Context) PlacementWeight() int32 {
	if c.Weight == nil {
		return DefaultWeight
	}
	return *c.Weight
}
