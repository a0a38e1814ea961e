//! A publisher thread fills loans with typed samples; a subscriber waits
//! for each, reads it through a zero-copy view, and is stopped by a
//! Canceller at the end. Run with `cargo run -p nerve --example pubsub`.
use nerve::{Access, Channel, Error, Options, Wait, Which};
use std::time::Duration;

#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Imu {
    stamp_ns: i64,
    accel: [f32; 3],
    seq: u32,
}

fn main() -> Result<(), Error> {
    let name = format!("example-pubsub-{}", std::process::id());
    let opts = Options::new()
        .slots(64)
        .data_size(64 * 1024)
        .type_name("example/Imu");
    let mut publisher = Channel::create(&name, &opts)?;
    let mut subscriber = Channel::open(&name, Access::Read)?;
    let stop = subscriber.canceller();

    let reader = std::thread::spawn(move || -> Result<u32, Error> {
        let mut received = 0;
        loop {
            // Blocks until a message, or until the main thread cancels.
            let view = match subscriber.view(Which::Next, Wait::Forever) {
                Ok(v) => v,
                Err(Error::Canceled) => return Ok(received),
                Err(e) => return Err(e),
            };
            // Copied out and validated: Err(Stale) had a writer lapped us.
            let imu: Imu = view.read_pod()?;
            println!(
                "seq {} (missed {}): {:?}",
                view.info().seq,
                view.info().missed,
                imu
            );
            received += 1;
        }
    });

    for seq in 0..5u32 {
        let imu = Imu {
            stamp_ns: nerve::clock::now_ns(),
            accel: [0.0, 0.0, 9.81],
            seq,
        };
        // A loan: ring space written in place, published on commit.
        publisher
            .loan(std::mem::size_of::<Imu>())?
            .commit_pod(&imu)?;
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(50));
    stop.cancel();
    let received = reader.join().expect("reader thread")?;
    println!("received {received} of 5");
    nerve::unlink(&name)
}
