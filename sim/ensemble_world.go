package sim

func (w *World) injectServerFault(f Fault) error {
	if err := checkServerFault(f, w.Servers()); err != nil {
		return err
	}
	panic("sim: server faults need an ensemble, which New does not build yet")
}
