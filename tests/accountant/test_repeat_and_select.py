

def test_epsilon_upper_reads_repeat_and_select_from_the_rdp_accountant():
    """The PLD accountant refuses repeat-and-select; the tightest sound bound is then the RDP one."""
    from dpaudit.accountant import RDPAccountant, epsilon_upper
    from dpaudit.events import Gaussian, PoissonSampled, RepeatAndSelect, SelfComposed

    event = RepeatAndSelect(SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 100), 10.0)
    best = epsilon_upper(event, 1e-5)
    assert best.method == "rdp"
    assert best.epsilon == RDPAccountant().compose(event).epsilon(1e-5)
