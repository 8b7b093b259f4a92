package webhook

// ControlForbidden exposes the guard's last check, on the socket's own
// address just before connect(2), to the tests.
var ControlForbidden = controlForbidden
