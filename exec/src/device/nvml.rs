//! NVML readings: the energy counter and power for [`crate::energy`], and the device state
//! (clocks, temperature, power limit, driver) recorded before and after a run.
//! Invariant: NVML being absent is not an error; the run goes on with timing only and
//! says so in the results' notes.

use crate::energy::PowerMeter;
use kc_core::results::DeviceState;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::{Device, Nvml};

pub struct NvmlMeter<'a> {
    pub device: Device<'a>,
}

impl NvmlMeter<'_> {
    /// The energy counter, millijoules, read through a shared borrow: the thread that
    /// watches the counter's ticks ([`crate::energy::watch_ticks`]) reads it while the
    /// series reads power and clocks (NVML is thread-safe).
    pub fn energy_now_mj(&self) -> Result<u64, String> {
        self.device
            .total_energy_consumption()
            .map_err(|e| format!("NVML energy counter: {e}"))
    }

    /// The meter's readings through a shared borrow, beside the watching thread.
    pub fn reading(&self) -> NvmlReading<'_, '_> {
        NvmlReading { meter: self }
    }
}

/// [`NvmlMeter`]'s readings through a shared borrow.
pub struct NvmlReading<'m, 'a> {
    meter: &'m NvmlMeter<'a>,
}

impl PowerMeter for NvmlReading<'_, '_> {
    fn energy_mj(&mut self) -> Result<u64, String> {
        self.meter.energy_now_mj()
    }
    fn power_mw(&mut self) -> Result<u32, String> {
        self.meter
            .device
            .power_usage()
            .map_err(|e| format!("NVML power: {e}"))
    }
    fn temperature_c(&mut self) -> Option<u32> {
        self.meter.device.temperature(TemperatureSensor::Gpu).ok()
    }
    fn sm_clock_mhz(&mut self) -> Option<u32> {
        self.meter.device.clock_info(Clock::SM).ok()
    }
    fn clock_event_bits(&mut self) -> Option<u64> {
        self.meter
            .device
            .current_throttle_reasons()
            .ok()
            .map(|r| r.bits())
    }
}

pub fn init() -> Result<Nvml, String> {
    Nvml::init().map_err(|e| format!("NVML unavailable ({e}): energy is not measured, timing only"))
}

pub fn state(d: &Device<'_>) -> DeviceState {
    DeviceState {
        sm_clock_mhz: d.clock_info(Clock::SM).ok(),
        mem_clock_mhz: d.clock_info(Clock::Memory).ok(),
        temperature_c: d.temperature(TemperatureSensor::Gpu).ok(),
        power_w: d.power_usage().ok().map(|p| f64::from(p) / 1000.0),
    }
}

pub fn power_limit_w(d: &Device<'_>) -> Option<f64> {
    d.power_management_limit()
        .ok()
        .map(|p| f64::from(p) / 1000.0)
}
